/**
 * Reads the dead-letter topic without leaving a trace: the high watermarks are captured first, a throwaway
 * consumer group that never commits reads up to them, and the group is deleted afterwards
 * (src/adapters/kafka/topic-reader.ts).
 * Records come back in (partition, offset) order, so listings and pages are stable.
 * Encrypted values (src/adapters/dlq/dead-letter.ts) come back decrypted with `encryption`'s keys; one that none of them
 * decrypts fails the read, naming the record and the key id.
 */
import type { PayloadKeys } from '../../base/config/payload-keys.js';
import { decryptDeadLetterValue, DLQ_HEADERS } from '../../adapters/dlq/dead-letter.js';
import { withAdmin } from '../../adapters/kafka/admin.js';
import type { Kafka } from '../../adapters/kafka/client.js';
import { headerString } from '../../adapters/kafka/records.js';
import type { OffsetRange } from '../../adapters/kafka/topic-reader.js';
import { NotFoundError } from '../cli-errors.js';
import { readTopic, topicPartitions } from '../kafka.js';
import type { DlqRecord } from './record.js';
import { formatPosition, type Position } from '../position.js';

export interface DlqReadOptions {
  kafka: Kafka;
  topic: string;
  clientId?: string;
  /** Read only these records; NotFoundError names the first one the topic does not hold. Default: all. */
  positions?: Position[];
  /** Keep a record (default: keep all). Records not kept are not held in memory. */
  keep?: (record: DlqRecord) => boolean;
  /** Hold records without their values (`value` is null): for commands that read only headers. */
  headersOnly?: boolean;
  /** The keys that decrypt encrypted values (config.payloadEncryption); needed only when values are read. */
  encryption?: PayloadKeys;
}

export interface DlqReadResult {
  records: DlqRecord[];
  /** Records read, kept or not. */
  scanned: number;
}

export async function readDlq(opts: DlqReadOptions): Promise<DlqReadResult> {
  const partitions = await withAdmin(opts.kafka, (admin) => topicPartitions(admin, opts.topic));
  let ranges: OffsetRange[] = partitions.map((p) => ({ partition: p.partition, start: p.low, end: p.high }));
  const wanted = opts.positions ? new Set(opts.positions.map((p) => formatPosition(p.partition, p.offset))) : undefined;
  if (opts.positions) {
    for (const pos of opts.positions) {
      const p = partitions.find((x) => x.partition === pos.partition);
      if (!p)
        throw new NotFoundError(
          `no record at ${formatPosition(pos.partition, pos.offset)}: ${opts.topic} has partitions 0–${partitions.length - 1}`,
        );
      if (pos.offset < p.low || pos.offset >= p.high) {
        throw new NotFoundError(
          `no record at ${formatPosition(pos.partition, pos.offset)}: partition ${p.partition} of ${opts.topic} holds ` +
            (p.low === p.high ? 'no records' : `offsets ${p.low}–${p.high - 1n}`),
        );
      }
    }
    ranges = ranges.map((r) => {
      const mine = opts.positions!.filter((p) => p.partition === r.partition).map((p) => p.offset);
      if (mine.length === 0) return { ...r, start: r.end };
      const min = mine.reduce((a, b) => (b < a ? b : a));
      const max = mine.reduce((a, b) => (b > a ? b : a));
      return { partition: r.partition, start: min, end: max + 1n };
    });
  }

  const records: DlqRecord[] = [];
  let scanned = 0;
  await readTopic({
    kafka: opts.kafka,
    topic: opts.topic,
    ranges,
    clientId: opts.clientId,
    onRecord: ({ partition, record: r }) => {
      const record: DlqRecord = {
        partition,
        offset: r.offset,
        timestamp: r.timestamp,
        key: r.key,
        value: opts.headersOnly ? null : r.value,
        headers: r.headers ?? {},
      };
      if (wanted && !wanted.has(formatPosition(partition, r.offset))) return;
      if (record.value !== null) {
        const keyId = headerString(record.headers, DLQ_HEADERS.valueKeyId);
        record.value = decryptDeadLetterValue(
          record.value,
          record.headers,
          opts.encryption,
          `dead letter ${formatPosition(partition, r.offset)} of ${opts.topic}`,
        );
        if (keyId !== undefined) record.decryptedWith = keyId;
      }
      scanned += 1;
      if (!opts.keep || opts.keep(record)) records.push(record);
    },
  });
  if (wanted) {
    const got = new Set(records.map((r) => formatPosition(r.partition, r.offset)));
    const missing = [...wanted].find((w) => !got.has(w));
    if (missing) throw new NotFoundError(`no record at ${missing} in ${opts.topic} (the offset holds no data record)`);
  }
  records.sort(
    (a, b) =>
      a.partition - b.partition ||
      (BigInt(a.offset) < BigInt(b.offset) ? -1 : BigInt(a.offset) > BigInt(b.offset) ? 1 : 0),
  );
  return { records, scanned };
}
