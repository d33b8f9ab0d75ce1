/**
 * Copies of one dead letter. Dead-lettering is at-least-once: after a restart the same source record can be
 * dead-lettered again, so the DLQ may hold several copies of one origin. The CLI shows, pages and redrives each
 * origin as one dead letter.
 *
 * Rules:
 * - the origin of a record is its `dlq-original-topic`, `dlq-original-partition` and `dlq-original-offset`
 *   headers; records are copies when all three are present and equal, and a record lacking any of them is never
 *   grouped with another;
 * - the dead letter of a group is its first-written copy: the lowest offset among copies in one partition, the
 *   earliest DLQ write time (then the lower partition) across partitions;
 * - groups come back in the input order of their dead letters, each group's other copies in input order.
 */
import { DLQ_HEADERS } from '../../adapters/dlq/dead-letter.js';
import { header, summarize, type DlqRecord, type DlqSummary } from './record.js';
import { formatPosition } from '../position.js';

/** What grouping reads of a record. */
export type CopyableRecord = Pick<DlqRecord, 'partition' | 'offset' | 'timestamp' | 'headers'>;

/** One origin's records: the dead letter (first-written copy) and its other copies. */
export interface DeadLetterCopies<R extends CopyableRecord = DlqRecord> {
  deadLetter: R;
  /** The other copies of the same origin, in input order; empty when the dead letter is the only one. */
  copies: R[];
}

/** Where a record was consumed from, as its headers say. */
export interface Origin {
  topic: string;
  partition: string;
  offset: string;
}

/** The record's origin, or undefined when any of the three origin headers is missing or empty. */
export function originOf(record: Pick<DlqRecord, 'headers'>): Origin | undefined {
  const h = (name: string) => header(record, name);
  const topic = h(DLQ_HEADERS.topic);
  const partition = h(DLQ_HEADERS.partition);
  const offset = h(DLQ_HEADERS.offset);
  if (!topic || !partition || !offset) return undefined;
  return { topic, partition, offset };
}

/** A key equal for copies of one origin and for nothing else; undefined when the record has no origin. */
export function originKey(record: Pick<DlqRecord, 'headers'>): string | undefined {
  const o = originOf(record);
  return o && JSON.stringify([o.topic, o.partition, o.offset]);
}

/** `topic partition:offset` of the origin, for messages. */
export function describeOrigin(o: Origin): string {
  return `${o.topic} ${o.partition}:${o.offset}`;
}

/** Whether `a` was written to the DLQ before `b` (see the rules above). */
export function writtenBefore(a: CopyableRecord, b: CopyableRecord): boolean {
  if (a.partition === b.partition) return BigInt(a.offset) < BigInt(b.offset);
  const ta = Number(a.timestamp);
  const tb = Number(b.timestamp);
  if (ta !== tb) return ta < tb;
  return a.partition < b.partition;
}

/** Groups records by origin; see the rules above. */
export function groupCopies<R extends CopyableRecord>(records: readonly R[]): DeadLetterCopies<R>[] {
  const byOrigin = new Map<string, DeadLetterCopies<R> & { members: R[] }>();
  for (const r of records) {
    const key = originKey(r);
    if (key === undefined) continue;
    const g = byOrigin.get(key);
    if (!g) byOrigin.set(key, { deadLetter: r, copies: [], members: [r] });
    else {
      g.members.push(r);
      if (writtenBefore(r, g.deadLetter)) g.deadLetter = r;
    }
  }
  const groups: DeadLetterCopies<R>[] = [];
  for (const r of records) {
    const key = originKey(r);
    const g = key === undefined ? undefined : byOrigin.get(key)!;
    if (!g) groups.push({ deadLetter: r, copies: [] });
    else if (g.deadLetter === r) groups.push({ deadLetter: r, copies: g.members.filter((c) => c !== r) });
  }
  return groups;
}

/** Every record of the group, the dead letter first. */
export function allCopies<R extends CopyableRecord>(g: DeadLetterCopies<R>): R[] {
  return [g.deadLetter, ...g.copies];
}

/** A dead letter as listed: its summary, how many copies the DLQ holds (1 when single) and where the others are. */
export interface DeadLetterSummary extends DlqSummary {
  copies: number;
  /** `partition:offset` of the other copies, in DLQ order. */
  copyPositions: string[];
}

export function summarizeCopies(g: DeadLetterCopies): DeadLetterSummary {
  return {
    ...summarize(g.deadLetter),
    copies: 1 + g.copies.length,
    copyPositions: g.copies.map((c) => formatPosition(c.partition, c.offset)),
  };
}

/** Copies folded into their dead letters: records that are not the first-written copy of their origin. */
export function foldedCount(groups: readonly DeadLetterCopies<CopyableRecord>[]): number {
  return groups.reduce((n, g) => n + g.copies.length, 0);
}

/** "1 duplicate copy folded", "2 duplicate copies folded". */
export function describeFolded(n: number): string {
  return `${n} duplicate ${n === 1 ? 'copy' : 'copies'} folded`;
}
