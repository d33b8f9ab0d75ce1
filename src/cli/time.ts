/**
 * Points in time as operators type them: an RFC 3339 timestamp (`2026-01-31T12:00:00Z`,
 * `2026-01-31T13:00:00+01:00`), a duration ago (`90s`, `15m`, `2h`, `7d`, `1w`, combined as `1h30m`), or `now`.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
const DURATION = /^(?:\d+(?:ms|s|m|h|d|w))+$/;

/** What a time option accepts, for error messages. */
export const TIME_EXPECTED =
  'an RFC 3339 time such as 2026-01-31T12:00:00Z, or a duration ago such as 90s, 15m, 2h, 7d';

/** Milliseconds of a duration such as `1h30m`, or undefined when `text` is not one. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (!DURATION.test(t)) return undefined;
  let ms = 0;
  for (const [, n, unit] of t.matchAll(/(\d+)(ms|s|m|h|d|w)/g)) ms += Number(n) * UNIT_MS[unit!]!;
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The instant `text` names, relative ones counted back from `now` (ms); undefined when it names none. */
export function parseTime(text: string, now: number = Date.now()): Date | undefined {
  const t = text.trim();
  if (t === 'now') return new Date(now);
  const ago = parseDuration(t);
  if (ago !== undefined) return new Date(now - ago);
  const m = RFC3339.exec(t);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  // Date.parse rolls 2026-02-30 over into March; a timestamp that does not name its own calendar day is rejected.
  const day = new Date(Date.UTC(y!, mo! - 1, d!));
  if (day.getUTCMonth() !== mo! - 1 || day.getUTCDate() !== d! || h! > 23 || mi! > 59 || s! > 60) return undefined;
  const ms = Date.parse(t.replace(' ', 'T'));
  return Number.isNaN(ms) ? undefined : new Date(ms);
}
