/**
 * `fulfilment dlq show <partition:offset>`: one dead letter in full — every header and the payload. Personal
 * data is redacted by default (redact.ts); `--reveal` shows it, and only for the record asked for.
 *
 * Any copy's position works (copies.ts); the output names every position holding a copy of the same origin
 * and which of them is the first written, the one `dlq list` shows and `dlq redrive` sends.
 */
import type { CliContext } from '../context.js';
import { cliKafka } from '../kafka.js';
import { describeOrigin, groupCopies, originKey, originOf } from './copies.js';
import { readDlq } from './reader.js';
import { headerTexts } from './record.js';
import { DLQ_HEADERS } from '../../adapters/dlq/dead-letter.js';
import { println } from '../output.js';
import { formatPosition, type Position } from '../position.js';
import {
  DEFAULT_REDACT_FIELDS,
  displayText,
  PREVIEW_BYTES,
  Redactor,
  viewPayload,
  type PayloadView,
} from '../redact.js';

export interface DlqShowOptions {
  position: Position;
  /** Show sensitive values. Default false. */
  reveal?: boolean;
  /** Fields whose values are redacted. Default DEFAULT_REDACT_FIELDS. */
  redactFields?: string[];
  json?: boolean;
}

export interface DlqShowResult {
  position: string;
  topic: string;
  /** RFC 3339: when the record was written to the DLQ. */
  writtenAt: string;
  key: string | null;
  headers: Record<string, string | string[]>;
  payload: PayloadView;
  /** Whether sensitive values were shown. */
  revealed: boolean;
  /** Records in the DLQ holding this origin, this one included (1 when single). */
  copies: number;
  /** Position of the origin's first-written copy: the dead letter list and redrive use. */
  firstWritten: string;
  /** Positions of the other copies, in DLQ order. */
  copyPositions: string[];
  /** The key id the value was stored encrypted with (shown decrypted), or null when it was stored in clear. */
  decryptedWith: string | null;
}

export async function dlqShow(ctx: CliContext, opts: DlqShowOptions): Promise<DlqShowResult> {
  const { config, out } = ctx;
  const redactor = new Redactor(opts.redactFields ?? DEFAULT_REDACT_FIELDS);
  const reveal = opts.reveal ?? false;
  const { records } = await readDlq({
    kafka: cliKafka(ctx),
    topic: config.DLQ_TOPIC,
    clientId: `${config.KAFKA_CLIENT_ID}-cli`,
    positions: [opts.position],
    encryption: config.payloadEncryption,
  });
  const record = records[0]!;
  const position = formatPosition(opts.position.partition, opts.position.offset);
  let firstWritten = position;
  let copyPositions: string[] = [];
  const key = originKey(record);
  if (key !== undefined) {
    const same = await readDlq({
      kafka: cliKafka(ctx),
      topic: config.DLQ_TOPIC,
      clientId: `${config.KAFKA_CLIENT_ID}-cli`,
      headersOnly: true,
      keep: (r) => originKey(r) === key,
    });
    const group = groupCopies(same.records)[0];
    if (group) {
      const at = (r: { partition: number; offset: string }) => formatPosition(r.partition, r.offset);
      firstWritten = at(group.deadLetter);
      copyPositions = same.records.map(at).filter((p) => p !== position);
    }
  }
  const headers: Record<string, string | string[]> = {};
  for (const [k, raw] of headerTexts(record.headers)) {
    const v = !reveal && k === DLQ_HEADERS.errorMessage ? redactor.errorMessage(raw) : raw;
    const prev = headers[k];
    headers[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const result: DlqShowResult = {
    position,
    topic: config.DLQ_TOPIC,
    writtenAt: new Date(Number(record.timestamp)).toISOString(),
    key: record.key === null ? null : displayText(record.key),
    headers,
    payload: viewPayload(record.value, redactor, reveal),
    revealed: reveal,
    copies: 1 + copyPositions.length,
    firstWritten,
    copyPositions,
    decryptedWith: record.decryptedWith ?? null,
  };
  if (opts.json) println(out, JSON.stringify(result));
  else for (const line of render(result, redactor)) println(out, line);
  return result;
}

function render(r: DlqShowResult, redactor: Redactor): string[] {
  const lines = [`dead letter ${r.position} in ${r.topic}, written ${r.writtenAt}`];
  if (r.copies > 1) lines.push(`copies   ${copiesLine(r)}`);
  lines.push(`key      ${r.key ?? '(none)'}`, 'headers');
  const entries = Object.entries(r.headers).flatMap(([k, v]) =>
    Array.isArray(v) ? v.map((x) => [k, x] as const) : [[k, v] as const],
  );
  const width = Math.max(0, ...entries.map(([k]) => k.length));
  for (const [k, v] of entries) lines.push(`  ${k.padEnd(width)}  ${v}`);
  if (entries.length === 0) lines.push('  (none)');
  const p = r.payload;
  const first = (name: string) => {
    const v = r.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  if (first(DLQ_HEADERS.valueForm) === 'too-large') {
    lines.push(
      `payload  not in the DLQ: the original value was too large to keep (${first(DLQ_HEADERS.valueSize) ?? '?'} bytes, ` +
        `SHA-256 ${first(DLQ_HEADERS.valueSha256) ?? '?'}); dlq redrive skips this dead letter`,
    );
  } else if (p.encoding === 'empty') lines.push('payload  empty (no value)');
  else if (p.encoding === 'bytes') {
    lines.push(
      `payload  not JSON, ${p.size} bytes${stored(r)}; ${p.truncated ? `first ${PREVIEW_BYTES} shown escaped (--reveal shows all)` : 'shown escaped'}`,
    );
    lines.push(`  "${p.preview}${p.truncated ? '…' : ''}"`);
  } else {
    const note = r.revealed
      ? 'sensitive values REVEALED'
      : p.redacted.length > 0
        ? `values of ${p.redacted.join(', ')} redacted (--reveal shows them)`
        : `nothing to redact (redacting ${redactor.fieldNames.join(', ')})`;
    const form =
      first(DLQ_HEADERS.valueForm) === 'validated-event' ? ' (the event as validated, re-encoded by the workflow)' : '';
    lines.push(`payload  JSON, ${p.size} bytes${form}${stored(r)}; ${note}`);
    for (const l of JSON.stringify(p.value, null, 2).split('\n')) lines.push(`  ${l}`);
  }
  return lines;
}

/** How the value was stored, when encrypted. */
const stored = (r: DlqShowResult) =>
  r.decryptedWith === null ? '' : ` (stored encrypted with key ${r.decryptedWith}, decrypted)`;

/** `2 of origin orders 1:7: 0:3 (first written: list and redrive use it), 0:5 (this one)`. */
function copiesLine(r: DlqShowResult): string {
  const all = [...r.copyPositions, r.position].sort((a, b) => {
    const [pa, oa] = a.split(':').map(BigInt) as [bigint, bigint];
    const [pb, ob] = b.split(':').map(BigInt) as [bigint, bigint];
    return pa !== pb ? (pa < pb ? -1 : 1) : oa < ob ? -1 : oa > ob ? 1 : 0;
  });
  const notes = (p: string) =>
    [p === r.position ? 'this one' : '', p === r.firstWritten ? 'first written: list and redrive use it' : ''].filter(
      Boolean,
    );
  const origin = originOf({ headers: r.headers });
  const where = origin ? ` of origin ${describeOrigin(origin)}` : '';
  return `${r.copies}${where}: ${all.map((p) => (notes(p).length > 0 ? `${p} (${notes(p).join(', ')})` : p)).join(', ')}`;
}
