/** Payload encryption: the keys every Temporal client and the DLQ use, from the variable or its file, and the current one. */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseKeyList, PayloadKeys } from './payload-keys.js';
import { nonEmpty, readableFile, type FieldsOf } from './fields.js';

export const encryptionSchema = {
  /**
   * Keys that encrypt Temporal payloads and dead-letter values (AES-256-GCM): `keyId:base64` entries of 32-byte keys,
   * comma-separated (e.g. `k2:<openssl rand -base64 32>,k1:...`). Unset (and no _FILE): nothing is encrypted.
   */
  PAYLOAD_ENCRYPTION_KEYS: z
    .string()
    .optional()
    // Parsed from the environment into Config.payloadEncryption (loadConfig); the configuration never holds the text.
    .transform((v) => (v === undefined ? undefined : '(hidden: see payloadEncryption)')),
  /** File holding the same list (a mounted secret), entries separated by commas or new lines. */
  PAYLOAD_ENCRYPTION_KEYS_FILE: readableFile().optional(),
  /** The key new payloads are encrypted with (rotation: add the new key, point this at it). Default: the first key. */
  PAYLOAD_ENCRYPTION_KEY_ID: nonEmpty.optional(),
};

/** What this concern's variables parse to: its checks below read these. */
type Config = FieldsOf<typeof encryptionSchema>;

/**
 * The payload encryption keys from PAYLOAD_ENCRYPTION_KEYS or PAYLOAD_ENCRYPTION_KEYS_FILE (one of them) and the
 * current key id; undefined when neither is set. Problems name the variable, the entry and the key id, never a key.
 */
export function payloadKeys(env: NodeJS.ProcessEnv, c: Partial<Config>, problems: string[]): PayloadKeys | undefined {
  const inline = (env.PAYLOAD_ENCRYPTION_KEYS ?? '') !== '';
  const file = c.PAYLOAD_ENCRYPTION_KEYS_FILE;
  if (inline && (file !== undefined || (env.PAYLOAD_ENCRYPTION_KEYS_FILE ?? '') !== '')) {
    problems.push('PAYLOAD_ENCRYPTION_KEYS and PAYLOAD_ENCRYPTION_KEYS_FILE are both set: expected one of them');
    return undefined;
  }
  if (!inline && file === undefined) {
    if (c.PAYLOAD_ENCRYPTION_KEY_ID !== undefined)
      problems.push(
        'PAYLOAD_ENCRYPTION_KEY_ID is set, but there are no keys: set PAYLOAD_ENCRYPTION_KEYS (or PAYLOAD_ENCRYPTION_KEYS_FILE) too',
      );
    return undefined;
  }
  const source = inline ? 'PAYLOAD_ENCRYPTION_KEYS' : 'PAYLOAD_ENCRYPTION_KEYS_FILE';
  const { keys, problems: bad } = parseKeyList(inline ? env.PAYLOAD_ENCRYPTION_KEYS! : readFileSync(file!, 'utf8'));
  const where = inline ? 'PAYLOAD_ENCRYPTION_KEYS=(hidden)' : `PAYLOAD_ENCRYPTION_KEYS_FILE=${JSON.stringify(file)}`;
  if (bad.length > 0) {
    problems.push(`${where} is invalid: expected comma-separated keyId:base64-key entries; ${bad.join('; ')}`);
    return undefined;
  }
  const current = c.PAYLOAD_ENCRYPTION_KEY_ID ?? [...keys.keys()][0]!;
  if (!keys.has(current)) {
    problems.push(
      `PAYLOAD_ENCRYPTION_KEY_ID=${JSON.stringify(current)} is invalid: expected one of the key ids in ${source} (${[...keys.keys()].join(', ')})`,
    );
    return undefined;
  }
  return new PayloadKeys(keys, current, source);
}
