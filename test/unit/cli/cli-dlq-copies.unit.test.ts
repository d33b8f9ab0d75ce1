import { describe, expect, it } from 'vitest';
import {
  allCopies,
  describeFolded,
  foldedCount,
  groupCopies,
  originKey,
  summarizeCopies,
  writtenBefore,
} from '../../../src/cli/dlq/copies.js';
import type { DlqRecord } from '../../../src/cli/dlq/record.js';

/** A DLQ record at `partition:offset`; `origin` is `topic/partition/offset` of the source record, or null for none. */
function rec(at: string, origin: string | null, timestamp = 1_000, extra: Record<string, string> = {}): DlqRecord {
  const [partition, offset] = at.split(':') as [string, string];
  const headers: Record<string, string> = { 'dlq-error-class': 'MalformedEventError', ...extra };
  if (origin !== null) {
    const [topic, p, o] = origin.split('/') as [string, string, string];
    Object.assign(headers, { 'dlq-original-topic': topic, 'dlq-original-partition': p, 'dlq-original-offset': o });
  }
  return { partition: Number(partition), offset, timestamp: String(timestamp), key: null, value: null, headers };
}

const at = (r: DlqRecord) => `${r.partition}:${r.offset}`;
const shape = (records: DlqRecord[]) => groupCopies(records).map((g) => [at(g.deadLetter), g.copies.map(at)]);

describe('copies of one dead letter', () => {
  it('folds several copies of one origin into the first written, the others kept as its copies in order', () => {
    const records = [
      rec('0:3', 'orders/1/7'),
      rec('0:4', 'orders/2/9'),
      rec('0:5', 'orders/1/7', 2_000),
      rec('0:8', 'orders/1/7', 3_000),
    ];
    expect(shape(records)).toEqual([
      ['0:3', ['0:5', '0:8']],
      ['0:4', []],
    ]);
    const [first] = groupCopies(records);
    expect(allCopies(first!).map(at)).toEqual(['0:3', '0:5', '0:8']);
    expect(foldedCount(groupCopies(records))).toBe(2);
  });

  it('keeps records of different origins apart, whichever part of the origin differs', () => {
    const records = [
      rec('0:0', 'orders/1/7'),
      rec('0:1', 'orders/1/8'),
      rec('0:2', 'orders/2/7'),
      rec('0:3', 'orders.eu/1/7'),
    ];
    expect(shape(records)).toEqual([
      ['0:0', []],
      ['0:1', []],
      ['0:2', []],
      ['0:3', []],
    ]);
    expect(foldedCount(groupCopies(records))).toBe(0);
  });

  it('never groups records without their origin headers, not even with each other', () => {
    const partial = rec('0:2', null, 1_000, { 'dlq-original-topic': 'orders', 'dlq-original-partition': '1' });
    const empty = rec('0:3', null, 1_000, {
      'dlq-original-topic': 'orders',
      'dlq-original-partition': '1',
      'dlq-original-offset': '',
    });
    const records = [rec('0:0', null), rec('0:1', null), partial, empty, rec('0:4', 'orders/1/7')];
    expect(records.slice(0, 4).map(originKey)).toEqual([undefined, undefined, undefined, undefined]);
    expect(shape(records)).toEqual([
      ['0:0', []],
      ['0:1', []],
      ['0:2', []],
      ['0:3', []],
      ['0:4', []],
    ]);
  });

  it('keeps the input order of the dead letters, interleaved copies and lone records included', () => {
    const records = [
      rec('0:0', 'orders/0/1'),
      rec('0:1', null),
      rec('0:2', 'orders/0/2'),
      rec('0:3', 'orders/0/1', 5_000),
      rec('0:4', 'orders/0/2', 5_000),
      rec('0:5', 'orders/0/3'),
    ];
    expect(shape(records)).toEqual([
      ['0:0', ['0:3']],
      ['0:1', []],
      ['0:2', ['0:4']],
      ['0:5', []],
    ]);
  });

  it('takes the lowest offset as first written within a partition, the earliest write time across partitions', () => {
    // Within a partition the offset is the write order, whatever the timestamps say.
    expect(writtenBefore(rec('0:3', 'o/1/1', 9_000), rec('0:4', 'o/1/1', 1_000))).toBe(true);
    // Across partitions: the earlier DLQ timestamp, then the lower partition.
    expect(writtenBefore(rec('2:9', 'o/1/1', 1_000), rec('0:1', 'o/1/1', 2_000))).toBe(true);
    expect(writtenBefore(rec('0:9', 'o/1/1', 1_000), rec('2:1', 'o/1/1', 1_000))).toBe(true);
    // A copy on a later partition written earlier is the dead letter; the group sits at its place in the input.
    expect(shape([rec('0:5', 'orders/1/7', 2_000), rec('1:0', 'orders/1/8'), rec('2:1', 'orders/1/7', 1_000)])).toEqual(
      [
        ['1:0', []],
        ['2:1', ['0:5']],
      ],
    );
  });

  it('compares offsets as numbers, not text', () => {
    expect(shape([rec('0:10', 'orders/1/7'), rec('0:9', 'orders/1/7')])).toEqual([['0:9', ['0:10']]]);
  });

  it('summarises a dead letter with its copy count and the positions of the other copies', () => {
    const [g, lone] = groupCopies([rec('0:3', 'orders/1/7'), rec('0:4', null), rec('0:5', 'orders/1/7')]);
    expect(summarizeCopies(g!)).toMatchObject({
      position: '0:3',
      originalTopic: 'orders',
      originalPosition: '1:7',
      copies: 2,
      copyPositions: ['0:5'],
    });
    expect(summarizeCopies(lone!)).toMatchObject({ position: '0:4', copies: 1, copyPositions: [] });
    expect([describeFolded(1), describeFolded(2)]).toEqual(['1 duplicate copy folded', '2 duplicate copies folded']);
  });

  it('returns nothing for nothing', () => {
    expect(groupCopies([])).toEqual([]);
  });
});
