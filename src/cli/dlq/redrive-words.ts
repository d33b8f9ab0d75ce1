/** What a `dlq redrive` run prints: one dead letter, one not sent and why, and the run's summary line's extras. */
import { describeFolded, type DeadLetterSummary } from './copies.js';
import { displayText } from '../redact.js';
import type { DlqRecord } from './record.js';
import type { RunPlan, Step } from './redrive-plan.js';
import type { Verdict } from './redriven-record.js';

const them = (n: number) => (n === 1 ? 'it' : 'them');

/** The run's words: one dead letter, one not sent and why, and the summary's extras for `sent` sent. */
export function runLines({ dryRun, result }: RunPlan) {
  const describe = (r: DlqRecord, s: DeadLetterSummary) =>
    `key=${r.key === null ? '(none)' : displayText(r.key)} event=${s.eventId ?? '-'} tenant=${s.tenantId ?? '-'} error=${s.errorClass ?? '-'}` +
    (s.copyPositions.length > 0
      ? `  ${s.copyPositions.length === 1 ? 'copy' : 'copies'} ${s.copyPositions.join(',')} not sent`
      : '');
  const would = (word: string, past: string) => (dryRun ? `would ${word}` : past);
  const notSent = (s: DeadLetterSummary, step: Exclude<Step, { kind: 'send' }>) => {
    if (step.kind === 'no-value') return `${would('skip', 'skipped')} ${s.position}: ${step.reason}`;
    if (step.kind === 'already') {
      return `${would('skip', 'skipped')} ${s.position}: already redriven at ${step.entry.at} by ${step.entry.operator} → ${step.entry.to}; not sent again (--again sends it again)`;
    }
    return `${would('refuse', 'refused')} ${s.position}: still malformed, the bridge would dead-letter it again: ${step.reason}; not sent (--force sends it anyway)`;
  };
  const summary = (sent: number) => {
    const extras: string[] = [];
    if (result.folded.length > 0) extras.push(describeFolded(result.folded.length));
    if (result.skipped.length > 0) extras.push(`${result.skipped.length} skipped (no value in the DLQ)`);
    if (result.alreadyRedriven.length > 0)
      extras.push(
        `${result.alreadyRedriven.length} skipped as already redriven (--again sends ${them(result.alreadyRedriven.length)} again)`,
      );
    if (result.refused.length > 0)
      extras.push(
        `${result.refused.length} refused as still malformed (--force sends ${them(result.refused.length)} anyway)`,
      );
    const count = (v: Verdict) => result.planned.filter((x) => x.verdict === v).length;
    const [valid, unknown, forced] = [count('order-event'), count('unknown-type'), count('malformed')];
    if (sent > 0 && forced > 0)
      extras.push(
        `${forced} forced though malformed: the bridge will dead-letter ${them(forced)} again, attempts and first failure carried forward`,
      );
    if (sent > 0 && unknown > 0) extras.push(`${unknown} of an unknown type: the bridge will ignore ${them(unknown)}`);
    if (!dryRun && valid > 0)
      extras.push(
        valid === sent
          ? 'duplicates are absorbed downstream by event id'
          : `duplicates of the ${valid} valid event(s) are absorbed downstream by event id`,
      );
    return extras.map((e) => `; ${e}`).join('');
  };
  return { describe, notSent, summary };
}
