/**
 * AES-256-GCM with node:crypto, shared by the Temporal payload codec and the dead-letter values: a random 12-byte
 * IV per message, the 16-byte authentication tag after the ciphertext (`iv ‖ ciphertext ‖ tag`), and the key id
 * (with what is encrypted: a Temporal payload or a DLQ value) as additional authenticated data, so a message whose
 * key id was changed, or that was moved from one use to the other, fails to decrypt instead of decrypting wrongly.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { PayloadKeys } from '../../base/config/payload-keys.js';

export const CIPHER_NAME = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What a message encrypts; part of the authenticated data. */
export type CipherUse = 'temporal-payload' | 'dlq-value';

/** A message encrypted with a key this process does not hold. */
export class UnknownKeyError extends Error {
  override name = 'UnknownKeyError';
  constructor(
    readonly keyId: string,
    what: string,
    keys: PayloadKeys | undefined,
  ) {
    super(
      keys
        ? `${what} is encrypted with key id "${keyId}", which is not configured (${keys.source} holds ${keys.describe()}): add that key to ${keys.source} to decrypt it`
        : `${what} is encrypted with key id "${keyId}", but no keys are configured: set PAYLOAD_ENCRYPTION_KEYS (or PAYLOAD_ENCRYPTION_KEYS_FILE) with that key to decrypt it`,
    );
  }
}

/** A message that does not decrypt with the key of its key id (another key under that id, or altered bytes). */
export class DecryptionError extends Error {
  override name = 'DecryptionError';
}

export function seal(keys: PayloadKeys, plaintext: Uint8Array, use: CipherUse): { keyId: string; data: Buffer } {
  const { id, key } = keys.current;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER_NAME, key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(`${use}:${id}`));
  const data = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { keyId: id, data };
}

/** The plaintext of `data`, encrypted under `keyId`; `what` names the message in errors ("payload 2", "dead letter 0:5"). */
export function open(
  keys: PayloadKeys | undefined,
  keyId: string,
  data: Uint8Array,
  use: CipherUse,
  what: string,
): Buffer {
  const key = keys?.key(keyId);
  if (!key) throw new UnknownKeyError(keyId, what, keys);
  if (data.length < IV_BYTES + TAG_BYTES) {
    throw new DecryptionError(
      `${what} (key id "${keyId}") is ${data.length} bytes: too short for ${CIPHER_NAME} (IV and tag alone are ${IV_BYTES + TAG_BYTES})`,
    );
  }
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const decipher = createDecipheriv(CIPHER_NAME, key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(`${use}:${keyId}`));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new DecryptionError(
      `${what} does not decrypt with the key configured as "${keyId}" (authentication failed): that id names another key here than the one it was encrypted with, or the bytes were altered`,
    );
  }
}
