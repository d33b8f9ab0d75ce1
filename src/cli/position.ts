/** A record's place in a topic, written `partition:offset` (e.g. `0:42`) everywhere the CLI shows or takes one. */

export interface Position {
  partition: number;
  offset: bigint;
}

export const POSITION_EXPECTED = 'partition:offset such as 0:42';

/** Parses `0:42`; undefined when `text` is not a partition:offset pair of non-negative integers. */
export function parsePosition(text: string): Position | undefined {
  const m = /^(\d{1,9}):(\d{1,19})$/.exec(text.trim());
  if (!m) return undefined;
  return { partition: Number(m[1]), offset: BigInt(m[2]!) };
}

/** Parses `0:42,1:7`; undefined when any element is not a position or a partition repeats. */
export function parsePositionList(text: string): Position[] | undefined {
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0) return undefined;
  const out: Position[] = [];
  for (const part of parts) {
    const p = parsePosition(part);
    if (!p || out.some((o) => o.partition === p.partition)) return undefined;
    out.push(p);
  }
  return out;
}

export function formatPosition(partition: number, offset: bigint | string | number): string {
  return `${partition}:${offset}`;
}
