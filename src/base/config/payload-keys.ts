/**
 * The payload encryption keys: PAYLOAD_ENCRYPTION_KEYS (or the file PAYLOAD_ENCRYPTION_KEYS_FILE) holds
 * `keyId:base64` entries of 32-byte AES-256 keys, separated by commas or new lines; PAYLOAD_ENCRYPTION_KEY_ID names
 * the current key (default: the first). New payloads are encrypted with the current key; any configured key decrypts
 * (rotation: add the new key, make it current, keep the old ones while histories or dead letters need them).
 *
 * Parsing is pure (no I/O) so src/base/config.ts validates the variables at start-up; its messages never repeat key
 * material, only entry numbers and key ids.
 */
import { inspect } from 'node:util';

/** Bytes of an AES-256 key. */
export const KEY_BYTES = 32;
/** What a key id may be: it is written in clear beside every encrypted payload. */
const KEY_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The configured keys; never printed (toJSON and util.inspect show only the key ids). */
export class PayloadKeys {
  readonly #keys: ReadonlyMap<string, Buffer>;

  constructor(
    keys: ReadonlyMap<string, Buffer>,
    /** The key new payloads are encrypted with. */
    readonly currentKeyId: string,
    /** Where the keys came from, for messages: PAYLOAD_ENCRYPTION_KEYS or PAYLOAD_ENCRYPTION_KEYS_FILE. */
    readonly source: string,
  ) {
    if (!keys.has(currentKeyId))
      throw new Error(`current key id ${JSON.stringify(currentKeyId)} is not among the keys`);
    this.#keys = keys;
  }

  /** The key under `keyId`, or undefined when it is not configured. */
  key(keyId: string): Buffer | undefined {
    return this.#keys.get(keyId);
  }

  get current(): { id: string; key: Buffer } {
    return { id: this.currentKeyId, key: this.#keys.get(this.currentKeyId)! };
  }

  /** The configured key ids, in the order given. */
  get ids(): string[] {
    return [...this.#keys.keys()];
  }

  /** `k2 (current), k1`: for messages. */
  describe(): string {
    return this.ids.map((id) => (id === this.currentKeyId ? `${id} (current)` : id)).join(', ');
  }

  toJSON(): { keyIds: string[]; currentKeyId: string } {
    return { keyIds: this.ids, currentKeyId: this.currentKeyId };
  }

  [inspect.custom](): string {
    return `PayloadKeys { ${this.describe()} }`;
  }
}

/**
 * The keys in a key list (the text of PAYLOAD_ENCRYPTION_KEYS or its file), or the problems with it: each names
 * the entry (by number and, when readable, key id) and what was expected, never the key itself.
 */
export function parseKeyList(text: string): { keys: Map<string, Buffer>; problems: string[] } {
  const keys = new Map<string, Buffer>();
  const problems: string[] = [];
  const entries = text
    .split(/[,\n]/)
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) problems.push('at least one keyId:base64-key entry, but there is none');
  entries.forEach((entry, i) => {
    const at = `entry ${i + 1}`;
    const colon = entry.indexOf(':');
    if (colon < 0) return void problems.push(`${at}: keyId:base64-key, but it has no ":" between a key id and the key`);
    const id = entry.slice(0, colon).trim();
    const material = entry.slice(colon + 1).trim();
    if (!KEY_ID.test(id))
      return void problems.push(
        `${at}: a key id of letters, digits, ".", "_" or "-" (at most 64, starting with a letter or digit) before the ":", got ${JSON.stringify(id.slice(0, 70))}`,
      );
    if (keys.has(id)) return void problems.push(`${at}: key id "${id}" is given twice: each key id names one key`);
    if (!BASE64.test(material))
      return void problems.push(
        `${at} (key id "${id}"): the key as standard base64 (A–Z a–z 0–9 + /, = padding), but it is not base64`,
      );
    const key = Buffer.from(material, 'base64');
    if (key.length !== KEY_BYTES)
      return void problems.push(
        `${at} (key id "${id}"): a base64 key of ${KEY_BYTES} bytes (AES-256; e.g. openssl rand -base64 32), but it decodes to ${key.length} bytes`,
      );
    keys.set(id, key);
  });
  return { keys, problems };
}
