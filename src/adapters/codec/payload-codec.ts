/**
 * The Temporal PayloadCodec that encrypts every payload (workflow and activity inputs and results, signals,
 * queries, updates, memos, heartbeats) with AES-256-GCM (cipher.ts). An encrypted payload is the whole original
 * payload (its metadata and data, protobuf-encoded) encrypted with the current key, with metadata
 * `encoding: binary/encrypted` and `encryption-key-id: <id>`; decoding takes the key the id names, so payloads
 * written under an older key still decode while that key is configured. A payload without that encoding passes
 * through decode untouched: histories written before encryption was turned on keep replaying.
 */
import { METADATA_ENCODING_KEY, ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { open, seal } from './cipher.js';
import type { PayloadKeys } from '../../base/config/payload-keys.js';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';

// A CommonJS module: its namespace is the default export under Node's ESM loader.
const { Payload: PayloadMessage } = proto.temporal.api.common.v1;

const text = (bytes: Uint8Array | null | undefined): string | undefined =>
  bytes ? Buffer.from(bytes).toString('utf8') : undefined;

/** True when the payload is one this codec encrypted. */
export function isEncrypted(payload: Payload): boolean {
  return text(payload.metadata?.[METADATA_ENCODING_KEY]) === ENCRYPTED_ENCODING;
}

export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly keys: PayloadKeys) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (isEncrypted(payload)) return payload; // never twice
      const { keyId, data } = seal(this.keys, PayloadMessage.encode(payload).finish(), 'temporal-payload');
      return {
        metadata: { [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: Buffer.from(keyId) },
        data,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload, i) =>
      decodeOne(this.keys, payload, payloads.length === 1 ? 'payload' : `payload ${i + 1} of ${payloads.length}`),
    );
  }
}

/** One payload decrypted (or returned as it is when not encrypted); errors name `what` and the key id. */
export function decodeOne(keys: PayloadKeys | undefined, payload: Payload, what = 'payload'): Payload {
  if (!isEncrypted(payload)) return payload;
  const keyId = text(payload.metadata?.[KEY_ID_METADATA]);
  if (keyId === undefined || keyId === '')
    throw new ValueError(
      `${what} is ${ENCRYPTED_ENCODING} but has no ${KEY_ID_METADATA} metadata: cannot tell which key decrypts it`,
    );
  if (!payload.data) throw new ValueError(`${what} is ${ENCRYPTED_ENCODING} (key id "${keyId}") but holds no data`);
  const decoded = PayloadMessage.decode(open(keys, keyId, payload.data, 'temporal-payload', what));
  return { metadata: decoded.metadata, data: decoded.data };
}

/**
 * Decrypts, in place, every encrypted payload anywhere in `message` (a workflow history, as fetched): what
 * `fulfilment workflow export` writes must replay where no key is configured (the replay gate). Returns how many
 * payloads it decrypted; a payload under a key that is not configured fails naming the key id.
 */
export function decryptPayloadsIn(message: unknown, keys: PayloadKeys | undefined): number {
  let decrypted = 0;
  const seen = new Set<object>();
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object' || seen.has(node) || ArrayBuffer.isView(node)) return;
    seen.add(node);
    for (const [key, child] of Object.entries(node)) {
      if (isPayloadShaped(child) && isEncrypted(child)) {
        (node as Record<string, unknown>)[key] = decodeOne(keys, child, `payload in ${key}`);
        decrypted += 1;
      } else {
        visit(child);
      }
    }
  };
  visit(message);
  return decrypted;
}

function isPayloadShaped(value: unknown): value is Payload {
  return (
    value !== null &&
    typeof value === 'object' &&
    'metadata' in value &&
    typeof (value as Payload).metadata === 'object'
  );
}
