import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { DecryptionError, UnknownKeyError } from '../../../../src/adapters/codec/cipher.js';
import { parseKeyList, PayloadKeys } from '../../../../src/base/config/payload-keys.js';
import {
  decryptPayloadsIn,
  EncryptionCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
} from '../../../../src/adapters/codec/payload-codec.js';
import { ConfigError, loadConfig } from '../../../../src/base/config.js';
import {
  decryptDeadLetterValue,
  deadLetterMessage,
  DLQ_HEADERS,
  type DeadLetter,
} from '../../../../src/adapters/dlq/dead-letter.js';

const b64 = () => randomBytes(32).toString('base64');
const keysOf = (spec: string, current?: string) =>
  loadConfig({ PAYLOAD_ENCRYPTION_KEYS: spec, ...(current ? { PAYLOAD_ENCRYPTION_KEY_ID: current } : {}) })
    .payloadEncryption!;
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? []).toString('utf8');
const order = { customerId: 'cust-5531', shippingAddress: { name: 'Ada Lovelace', email: 'ada@example.com' } };
const failure = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('payload encryption codec (AES-256-GCM)', () => {
  const k1 = b64();
  const k2 = b64();

  it('decrypts every encrypted payload nested in a history, in place, and leaves clear ones as they are', async () => {
    const keys = keysOf(`k1:${k1}`);
    const codec = new EncryptionCodec(keys);
    const plain = defaultPayloadConverter.toPayload(order);
    const attribute = defaultPayloadConverter.toPayload('acme');
    const [enc] = await codec.encode([plain]);
    const history = {
      events: [
        {
          eventId: 1,
          workflowExecutionStartedEventAttributes: {
            input: { payloads: [enc] },
            searchAttributes: { indexedFields: { TenantId: attribute } },
          },
        },
        { eventId: 2, workflowExecutionSignaledEventAttributes: { input: { payloads: [enc, plain] } } },
      ],
    };
    expect(decryptPayloadsIn(history, keys)).toBe(2);
    const again = JSON.stringify(history);
    expect(again).not.toContain(ENCRYPTED_ENCODING);
    expect(
      defaultPayloadConverter.fromPayload(
        history.events[0]!.workflowExecutionStartedEventAttributes!.input.payloads[0]!,
      ),
    ).toEqual(order);
    expect(history.events[0]!.workflowExecutionStartedEventAttributes!.searchAttributes.indexedFields.TenantId).toBe(
      attribute,
    );
    expect(() => decryptPayloadsIn({ events: [{ input: { payloads: [enc] } }] }, keysOf(`k2:${k2}`))).toThrow(
      /key id "k1"/,
    );
  });

  it('encrypts the whole payload under the current key id and decodes it back exactly', async () => {
    const codec = new EncryptionCodec(keysOf(`k1:${k1}`));
    const plain = defaultPayloadConverter.toPayload(order);
    const [enc] = await codec.encode([plain]);
    expect(text(enc!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(enc!.metadata![KEY_ID_METADATA])).toBe('k1');
    expect(Object.keys(enc!.metadata!)).toEqual(['encoding', KEY_ID_METADATA]); // json/plain is inside, not beside
    for (const secret of ['cust-5531', 'Ada Lovelace', 'ada@example.com', 'json/plain'])
      expect(Buffer.from(enc!.data!).includes(secret)).toBe(false);
    const [dec] = await codec.decode([enc!]);
    expect(text(dec!.metadata!.encoding)).toBe('json/plain');
    expect(defaultPayloadConverter.fromPayload(dec!)).toEqual(order);
  });

  it('uses a fresh IV per payload: the same payload encrypts differently every time', async () => {
    const codec = new EncryptionCodec(keysOf(`k1:${k1}`));
    const plain = defaultPayloadConverter.toPayload(order);
    const [a, b] = await codec.encode([plain, plain]);
    expect(Buffer.from(a!.data!).subarray(0, 12).equals(Buffer.from(b!.data!).subarray(0, 12))).toBe(false);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('rotation: after a new current key, payloads under the old key still decode; new ones use the new key', async () => {
    const [old] = await new EncryptionCodec(keysOf(`k1:${k1}`)).encode([defaultPayloadConverter.toPayload(order)]);
    const rotated = new EncryptionCodec(keysOf(`k1:${k1},k2:${k2}`, 'k2'));
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([old!]))[0]!)).toEqual(order);
    const [fresh] = await rotated.encode([defaultPayloadConverter.toPayload('x')]);
    expect(text(fresh!.metadata![KEY_ID_METADATA])).toBe('k2');
  });

  it('a payload under a key id that is not configured fails naming that id and the ids that are', async () => {
    const [old] = await new EncryptionCodec(keysOf(`k1:${k1}`)).encode([defaultPayloadConverter.toPayload(order)]);
    const err = await new EncryptionCodec(keysOf(`k2:${k2},k3:${b64()}`)).decode([old!]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnknownKeyError);
    expect((err as Error).message).toBe(
      'payload is encrypted with key id "k1", which is not configured (PAYLOAD_ENCRYPTION_KEYS holds k2 (current), k3): add that key to PAYLOAD_ENCRYPTION_KEYS to decrypt it',
    );
  });

  it('a changed key id, another key under the same id, or altered bytes fail authentication', async () => {
    const codec = new EncryptionCodec(keysOf(`k1:${k1},k2:${k2}`));
    const [enc] = await codec.encode([defaultPayloadConverter.toPayload(order)]);
    const relabelled: Payload = { ...enc!, metadata: { ...enc!.metadata, [KEY_ID_METADATA]: Buffer.from('k2') } };
    await expect(codec.decode([relabelled])).rejects.toThrow(DecryptionError);
    await expect(new EncryptionCodec(keysOf(`k1:${k2}`)).decode([enc!])).rejects.toThrow(
      /does not decrypt with the key configured as "k1" \(authentication failed\)/,
    );
    const flipped = Buffer.from(enc!.data!);
    flipped[20] = flipped[20]! ^ 1;
    await expect(codec.decode([{ ...enc!, data: flipped }])).rejects.toThrow(DecryptionError);
  });

  it('payloads without the encrypted encoding pass through decode untouched (histories from before encryption)', async () => {
    const plain = defaultPayloadConverter.toPayload(order);
    const binary: Payload = { metadata: { encoding: Buffer.from('binary/null') } };
    expect(await new EncryptionCodec(keysOf(`k1:${k1}`)).decode([plain, binary])).toEqual([plain, binary]);
  });

  it('never encrypts twice', async () => {
    const codec = new EncryptionCodec(keysOf(`k1:${k1}`));
    const [once] = await codec.encode([defaultPayloadConverter.toPayload(order)]);
    expect(await codec.encode([once!])).toEqual([once]);
  });
});

describe('payload encryption configuration', () => {
  it('is off without keys', () => {
    expect(loadConfig({}).payloadEncryption).toBeUndefined();
  });

  it('takes the first key as current unless PAYLOAD_ENCRYPTION_KEY_ID says otherwise; never prints key material', () => {
    const secret = b64();
    const keys = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: ` new:${secret} , old:${b64()}` }).payloadEncryption!;
    expect(keys.currentKeyId).toBe('new');
    expect(keys.ids).toEqual(['new', 'old']);
    expect(keysOf(`new:${secret},old:${b64()}`, 'old').currentKeyId).toBe('old');
    expect(JSON.stringify(keys)).not.toContain(secret);
    expect(inspect(keys)).toBe('PayloadKeys { new (current), old }');
    expect(inspect(loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `new:${secret}` }), { depth: 5 })).not.toContain(secret);
  });

  it('reads PAYLOAD_ENCRYPTION_KEYS_FILE, one entry per line', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys');
    writeFileSync(file, `k2:${b64()}\nk1:${b64()}\n`);
    expect(loadConfig({ PAYLOAD_ENCRYPTION_KEYS_FILE: file }).payloadEncryption!.describe()).toBe('k2 (current), k1');
    expect(failure({ PAYLOAD_ENCRYPTION_KEYS_FILE: file, PAYLOAD_ENCRYPTION_KEYS: `k:${b64()}` })).toContain(
      'PAYLOAD_ENCRYPTION_KEYS and PAYLOAD_ENCRYPTION_KEYS_FILE are both set: expected one of them',
    );
    writeFileSync(file, 'k1:short\n');
    expect(failure({ PAYLOAD_ENCRYPTION_KEYS_FILE: file })).toContain(
      `PAYLOAD_ENCRYPTION_KEYS_FILE="${file}" is invalid: expected comma-separated keyId:base64-key entries; entry 1 (key id "k1"): the key as standard base64`,
    );
  });

  it('says which entry is malformed and how, without repeating the key', () => {
    const short = randomBytes(16).toString('base64');
    const msg = failure({
      PAYLOAD_ENCRYPTION_KEYS: `k1:${b64()},k2:${short},nocolon,k1:${b64()},bad id:${b64()},k3:not*base64`,
    });
    expect(msg).toContain(
      'PAYLOAD_ENCRYPTION_KEYS=(hidden) is invalid: expected comma-separated keyId:base64-key entries;',
    );
    expect(msg).toContain(
      'entry 2 (key id "k2"): a base64 key of 32 bytes (AES-256; e.g. openssl rand -base64 32), but it decodes to 16 bytes',
    );
    expect(msg).toContain('entry 3: keyId:base64-key, but it has no ":" between a key id and the key');
    expect(msg).toContain('entry 4: key id "k1" is given twice');
    expect(msg).toContain('entry 5: a key id of letters, digits');
    expect(msg).toContain('entry 6 (key id "k3"): the key as standard base64');
    expect(msg).not.toContain(short);
  });

  it('refuses a current key id that is not among the keys, or one without keys', () => {
    expect(failure({ PAYLOAD_ENCRYPTION_KEYS: `k1:${b64()},k2:${b64()}`, PAYLOAD_ENCRYPTION_KEY_ID: 'k9' })).toContain(
      'PAYLOAD_ENCRYPTION_KEY_ID="k9" is invalid: expected one of the key ids in PAYLOAD_ENCRYPTION_KEYS (k1, k2)',
    );
    expect(failure({ PAYLOAD_ENCRYPTION_KEY_ID: 'k1' })).toContain(
      'PAYLOAD_ENCRYPTION_KEY_ID is set, but there are no keys',
    );
  });

  it('checks the codec server settings', () => {
    expect(failure({ CODEC_SERVER_TOKEN: 'short-secret' })).toContain(
      'CODEC_SERVER_TOKEN=(hidden) is invalid: expected a token of at least 16 characters',
    );
    expect(failure({ CODEC_SERVER_CORS_ORIGINS: 'http://127.0.0.1:8233/ui' })).toContain('expected origins such as');
    expect(
      loadConfig({ CODEC_SERVER_CORS_ORIGINS: 'http://127.0.0.1:8233, https://ui.example.com' })
        .CODEC_SERVER_CORS_ORIGINS,
    ).toEqual(['http://127.0.0.1:8233', 'https://ui.example.com']);
    const file = join(mkdtempSync(join(tmpdir(), 'tok-')), 'token');
    writeFileSync(file, 'a-token-of-enough-length\n');
    expect(failure({ CODEC_SERVER_TOKEN: 'a-token-of-enough-length', CODEC_SERVER_TOKEN_FILE: file })).toContain(
      'CODEC_SERVER_TOKEN and CODEC_SERVER_TOKEN_FILE are both set',
    );
  });

  it('parseKeyList accepts commas and new lines, spaces around entries', () => {
    const { keys, problems } = parseKeyList(`a:${b64()},\n b:${b64()} \n`);
    expect(problems).toEqual([]);
    expect(new PayloadKeys(keys, 'b', 'test').describe()).toBe('a, b (current)');
  });
});

describe('dead-letter values with encryption', () => {
  const dead = (value: string): DeadLetter => ({
    key: 't/o',
    value,
    headers: { traceparent: 'x' },
    origin: { topic: 'orders', partition: 0, offset: '7' },
    group: 'g',
    error: { name: 'MalformedEventError', message: 'bad' },
    attempts: 1,
    firstFailureAt: new Date(),
    lastFailureAt: new Date(),
    stage: 'edge',
  });
  const value = JSON.stringify({ eventId: 'e1', tenantId: 't', data: order });

  it('the value is encrypted with the current key, named in the headers; ids stay readable; it decrypts back', () => {
    const keys = keysOf(`k1:${b64()}`);
    const m = deadLetterMessage(dead(value), keys);
    expect(Buffer.isBuffer(m.value) && m.value.includes('cust-5531')).toBe(false);
    expect(m.headers).toMatchObject({
      [DLQ_HEADERS.valueEncryption]: 'aes-256-gcm',
      [DLQ_HEADERS.valueKeyId]: 'k1',
      [DLQ_HEADERS.eventId]: 'e1',
      traceparent: 'x',
    });
    expect(decryptDeadLetterValue(m.value as Buffer, m.headers, keys, 'dead letter 0:1')!.toString()).toBe(value);
  });

  it('without keys the value is kept as it came; reading an encrypted one without its key names the key id', () => {
    expect(deadLetterMessage(dead(value)).value).toBe(value);
    const m = deadLetterMessage(dead(value), keysOf(`k1:${b64()}`));
    expect(() => decryptDeadLetterValue(m.value as Buffer, m.headers, undefined, 'dead letter 0:1')).toThrow(
      'dead letter 0:1 is encrypted with key id "k1", but no keys are configured: set PAYLOAD_ENCRYPTION_KEYS (or PAYLOAD_ENCRYPTION_KEYS_FILE) with that key to decrypt it',
    );
    expect(() =>
      decryptDeadLetterValue(m.value as Buffer, m.headers, keysOf(`k2:${b64()}`), 'dead letter 0:1'),
    ).toThrow(/key id "k1", which is not configured/);
  });
});
