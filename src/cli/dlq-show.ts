/**
 * `fulfilment dlq show <partition:offset>`: one dead letter in full — every header and the payload. Personal
 * data is redacted by default (redact.ts); `--reveal` shows it, and only for the record asked for.
 */
import { cliKafka, type CliContext } from './context.js';
import { readDlq } from './dlq-reader.js';
import { headerTexts } from './dlq-record.js';
import { DLQ_HEADERS } from '../dlq/dead-letter.js';
import { println } from './output.js';
import { formatPosition, type Position } from './position.js';
import { DEFAULT_REDACT_FIELDS, displayText, PREVIEW_BYTES, Redactor, viewPayload, type PayloadView } from './redact.js';

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
}

export async function dlqShow(ctx: CliContext, opts: DlqShowOptions): Promise<DlqShowResult> {
  const { config, out } = ctx;
  const redactor = new Redactor(opts.redactFields ?? DEFAULT_REDACT_FIELDS);
  const reveal = opts.reveal ?? false;
  const { records } = await readDlq({ kafka: cliKafka(ctx), topic: config.DLQ_TOPIC, clientId: `${config.KAFKA_CLIENT_ID}-cli`, positions: [opts.position] });
  const record = records[0]!;
  const headers: Record<string, string | string[]> = {};
  for (const [k, raw] of headerTexts(record.headers)) {
    const v = !reveal && k === DLQ_HEADERS.errorMessage ? redactor.errorMessage(raw) : raw;
    const prev = headers[k];
    headers[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const result: DlqShowResult = {
    position: formatPosition(opts.position.partition, opts.position.offset),
    topic: config.DLQ_TOPIC,
    writtenAt: new Date(Number(record.timestamp)).toISOString(),
    key: record.key === null ? null : displayText(record.key),
    headers,
    payload: viewPayload(record.value, redactor, reveal),
    revealed: reveal,
  };
  if (opts.json) println(out, JSON.stringify(result));
  else for (const line of render(result, redactor)) println(out, line);
  return result;
}

function render(r: DlqShowResult, redactor: Redactor): string[] {
  const lines = [`dead letter ${r.position} in ${r.topic}, written ${r.writtenAt}`, `key      ${r.key ?? '(none)'}`, 'headers'];
  const entries = Object.entries(r.headers).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x] as const) : [[k, v] as const]));
  const width = Math.max(0, ...entries.map(([k]) => k.length));
  for (const [k, v] of entries) lines.push(`  ${k.padEnd(width)}  ${v}`);
  if (entries.length === 0) lines.push('  (none)');
  const p = r.payload;
  if (p.encoding === 'empty') lines.push('payload  empty (no value)');
  else if (p.encoding === 'bytes') {
    lines.push(`payload  not JSON, ${p.size} bytes; ${p.truncated ? `first ${PREVIEW_BYTES} shown escaped (--reveal shows all)` : 'shown escaped'}`);
    lines.push(`  "${p.preview}${p.truncated ? '…' : ''}"`);
  } else {
    const note = r.revealed
      ? 'sensitive values REVEALED'
      : p.redacted.length > 0
        ? `values of ${p.redacted.join(', ')} redacted (--reveal shows them)`
        : `nothing to redact (redacting ${redactor.fieldNames.join(', ')})`;
    lines.push(`payload  JSON, ${p.size} bytes; ${note}`);
    for (const l of JSON.stringify(p.value, null, 2).split('\n')) lines.push(`  ${l}`);
  }
  return lines;
}
