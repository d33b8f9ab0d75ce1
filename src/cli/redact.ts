/**
 * Redaction of personal data in dead-lettered payloads. By default the values of sensitive fields are replaced
 * with "[redacted]" wherever they occur in the JSON (any depth, field names matched case-insensitively);
 * showing them takes an explicit `--reveal`. Non-JSON payloads cannot be redacted field by field: they are shown
 * as their size and a short escaped prefix.
 */

/** Fields whose values are hidden unless `--reveal` is given. */
export const DEFAULT_REDACT_FIELDS = ['customerId', 'shippingAddress', 'email', 'phone', 'name'] as const;

export const REDACTED = '[redacted]';

/** Bytes of a non-JSON payload shown without `--reveal`. */
export const PREVIEW_BYTES = 64;

export class Redactor {
  private readonly fields: Set<string>;

  constructor(readonly fieldNames: readonly string[] = DEFAULT_REDACT_FIELDS) {
    this.fields = new Set(fieldNames.map((f) => f.toLowerCase()));
  }

  isSensitive(field: string): boolean {
    return this.fields.has(field.toLowerCase());
  }

  /** A copy of `value` with every sensitive field's value replaced; reports which fields it hid. */
  json(value: unknown, hidden: Set<string> = new Set()): unknown {
    if (Array.isArray(value)) return value.map((v) => this.json(v, hidden));
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (this.isSensitive(k)) {
        out[k] = REDACTED;
        hidden.add(k);
      } else out[k] = this.json(v, hidden);
    }
    return out;
  }

  /**
   * The parser's error messages quote the offending value ("field data.customerId: expected a string, got 123");
   * when the field is sensitive, the quoted value is hidden too.
   */
  errorMessage(message: string): string {
    const m = /^field ([^:]+): (.*), got (.*)$/s.exec(message);
    if (!m) return message;
    const last =
      m[1]!
        .split(/[.[\]]/)
        .filter(Boolean)
        .pop() ?? '';
    return this.isSensitive(last) ? `field ${m[1]}: ${m[2]}, got ${REDACTED}` : message;
  }
}

/** Bytes as text: printable ASCII as is, everything else as \xNN (\n, \t, \\ and \" escaped). */
export function escapeBytes(bytes: Buffer): string {
  let s = '';
  for (const b of bytes) {
    if (b === 0x5c) s += '\\\\';
    else if (b === 0x22) s += '\\"';
    else if (b === 0x0a) s += '\\n';
    else if (b === 0x09) s += '\\t';
    else if (b >= 0x20 && b < 0x7f) s += String.fromCharCode(b);
    else s += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return s;
}

/** Text as is when it is valid UTF-8 without control characters, else escaped bytes. */
export function displayText(bytes: Buffer | string): string {
  if (typeof bytes === 'string') return bytes;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return escapeBytes(bytes);
  }
  const control = [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
  return control ? escapeBytes(bytes) : text;
}

export type PayloadView =
  | { encoding: 'empty'; size: 0 }
  | { encoding: 'json'; size: number; value: unknown; redacted: string[] }
  | { encoding: 'bytes'; size: number; preview: string; truncated: boolean };

/** How a record value is shown: JSON (redacted unless `reveal`), or size + escaped bytes. */
export function viewPayload(value: Buffer | null, redactor: Redactor, reveal: boolean): PayloadView {
  if (value === null || value.length === 0) return { encoding: 'empty', size: 0 };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    const shown = reveal ? value : value.subarray(0, PREVIEW_BYTES);
    return {
      encoding: 'bytes',
      size: value.length,
      preview: escapeBytes(shown),
      truncated: shown.length < value.length,
    };
  }
  if (reveal) return { encoding: 'json', size: value.length, value: parsed, redacted: [] };
  const hidden = new Set<string>();
  const redacted = redactor.json(parsed, hidden);
  return { encoding: 'json', size: value.length, value: redacted, redacted: [...hidden].sort() };
}
