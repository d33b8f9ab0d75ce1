/**
 * The service over Kafka SASL_SSL: the real service process (src/service.ts, worker and bridge) against the local
 * stack's SASL_SSL listener — SCRAM-SHA-512 as the stack's user, the broker's certificate verified against the
 * stack's CA — with the test's own producer, admin and watcher on the same listener. Orders ship, a malformed
 * record is dead-lettered over SASL_SSL, and the CLI lists it (with SCRAM-SHA-512 and -256, PLAIN and OAUTHBEARER
 * through a token provider module). Then what no wait can cure stops start-up at once:
 * a wrong password, a CA that did not sign the broker's certificate and a name the certificate does not carry
 * each make the process exit 1 with a message naming the variables to check, after one attempt (a worker alone
 * too); a broker that is not there is waited for, and a first listed broker that is down is passed over.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KafkaSaslSslInfo, repoRoot, makeCa } from '../../tools/stack/index.js';
import { caughtUp, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { saslSslEnv, saslSslListener } from '../support/kafka-sasl-ssl.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';

const run = promisify(execFile);
const PARTITIONS = 3; // a scenario's orders topic (test/support/harness.ts)

let listener: KafkaSaslSslInfo;
let s: Scenario;
const tmp = mkdtempSync(join(tmpdir(), 'kafka-security-it-'));
const procs: ServiceProcess[] = [];

/** An OAUTHBEARER token provider module: an unsigned JWT for the stack's user, valid for an hour. */
const TOKEN_PROVIDER = `const part = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
export default async function token() {
  const now = Math.floor(Date.now() / 1000);
  return { value: part({ alg: 'none' }) + '.' + part({ sub: 'fulfilment', iat: now, exp: now + 3600 }) + '.' };
}
`;

const definedOnly = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));

function service(env: Record<string, string | undefined>): ServiceProcess {
  const p = startServiceProcess(definedOnly({ ...s.env, FULFILMENT_ROLES: 'worker,bridge', ...env }));
  procs.push(p);
  return p;
}

/** Waits for the process to end by itself; its exit code, stderr and log lines. */
async function exitOf(
  p: ServiceProcess,
): Promise<{ code: number | string; stderr: string; lines: Record<string, unknown>[] }> {
  const code = await p.exited;
  return { code, stderr: p.stderr(), lines: p.lines };
}

/** Connection attempts that failed, as kafkajs logs them: its broker pool reports each failed seed-broker connect once. */
const attempts = (lines: Record<string, unknown>[]) =>
  lines.filter((l) => l.component === 'kafkajs' && l.namespace === 'BrokerPool' && l.level === 50).length;

beforeAll(async () => {
  listener = await saslSslListener();
  s = await scenario('kafka-sasl-ssl', saslSslEnv(listener));
});

afterAll(async () => {
  for (const p of procs) if (p.alive()) await p.stop();
  await s?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe("Kafka over SASL_SSL (SCRAM-SHA-512, the stack's CA)", () => {
  it('the service consumes, ships and dead-letters over SASL_SSL, and the CLI reads the dead letter', async () => {
    expect(s.config).toMatchObject({
      KAFKA_BROKERS: [listener.address],
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
    });
    const p = service({});
    await p.said('service ready');
    const tenant = s.tenant('sasl');
    const ids = Array.from({ length: PARTITIONS * 2 }, (_, i) => `o-${i}`);
    // the harness's producer writes over SASL_SSL too (its client is built from the scenario's config)
    await s.produce([
      ...ids.map((id, i) => ({ partition: i % PARTITIONS, key: id, value: events.placed(tenant, id) })),
      { partition: 0, key: 'poison', value: '{"not": "an order event"' },
    ]);
    await waitFor(
      'every order shipped',
      async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
      120_000,
      200,
    );
    expect((await s.shipments(tenant)).map((x) => x.orderId).sort()).toEqual([...ids].sort());
    const [dead] = await s.readTopic(s.config.DLQ_TOPIC, 1);
    expect(dead?.headers).toMatchObject({
      'dlq-error-class': 'MalformedEventError',
      'dlq-original-topic': s.config.ORDERS_TOPIC,
    });
    expect(dead?.value?.toString()).toBe('{"not": "an order event"');
    await waitFor(
      'the group committed every record',
      () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
      60_000,
      200,
    );

    // One CLI command over the same listener, as an operator runs it.
    const { stdout } = await run(process.execPath, ['bin/fulfilment.mjs', 'dlq', 'list', '--json'], {
      cwd: repoRoot,
      env: s.env,
    });
    const listed = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { position: string; errorClass?: string });
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed[0])).toContain('MalformedEventError');
    // The other mechanisms the client speaks, against the same listener: PLAIN, and OAUTHBEARER through a token
    // provider module (the stack's broker accepts unsigned tokens).
    const provider = join(tmp, 'token.mjs');
    writeFileSync(provider, TOKEN_PROVIDER);
    for (const mechanism of [
      { KAFKA_SASL_MECHANISM: 'PLAIN' },
      { KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256' },
      {
        KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        KAFKA_SASL_USERNAME: undefined,
        KAFKA_SASL_PASSWORD_FILE: undefined,
        KAFKA_SASL_OAUTHBEARER_PROVIDER: provider,
      },
    ]) {
      const env = definedOnly({ ...s.env, ...mechanism });
      const res = await run(process.execPath, ['bin/fulfilment.mjs', 'dlq', 'list', '--json'], { cwd: repoRoot, env });
      expect(res.stdout.trim().split('\n'), mechanism.KAFKA_SASL_MECHANISM).toHaveLength(1);
    }

    expect(p.alive()).toBe(true);
    expect(await p.stop()).toBe(0);
  });

  it('provisioning creates its topics over SASL_SSL, then finds nothing to change', async () => {
    const topics = {
      ORDERS_TOPIC: `${s.config.ORDERS_TOPIC}-provisioned`,
      DLQ_TOPIC: `${s.config.DLQ_TOPIC}-provisioned`,
      ORDERS_TOPIC_PARTITIONS: '4',
    };
    const provision = async () => {
      const { stdout } = await run(process.execPath, ['bin/fulfilment.mjs', 'provision', '--only', 'kafka', '--json'], {
        cwd: repoRoot,
        env: { ...s.env, ...topics },
      });
      return JSON.parse(stdout.trim().split('\n').at(-1)!) as {
        kafka: { created: { topic: string; numPartitions: number }[] };
        changed: boolean;
      };
    };
    const first = await provision();
    expect(first.changed).toBe(true);
    expect(first.kafka.created.map((t) => t.topic).sort()).toEqual([topics.DLQ_TOPIC, topics.ORDERS_TOPIC].sort());
    // The test's admin, also on the SASL_SSL listener, sees what provisioning made.
    const [orders] = (await s.admin.fetchTopicMetadata({ topics: [topics.ORDERS_TOPIC] })).topics;
    expect(orders?.partitions).toHaveLength(4);
    expect((await provision()).changed).toBe(false);
  });

  it('a wrong password stops start-up at once: exit 1, the variables to check named, one attempt', async () => {
    const t0 = Date.now();
    const { code, stderr, lines } = await exitOf(
      service({ KAFKA_SASL_PASSWORD_FILE: undefined, KAFKA_SASL_PASSWORD: 'not-the-password' }),
    );
    expect(code).toBe(1);
    expect(stderr).toContain(
      `Kafka at ${listener.address} refused the SASL authentication (SCRAM-SHA-512, user "${listener.username}")`,
    );
    expect(stderr).toContain('Check KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD.');
    expect(stderr).not.toContain('not-the-password');
    expect(stderr).not.toMatch(/\n\s+at /); // the message, not a stack trace
    expect(lines.filter((l) => String(l.msg).startsWith('waiting for Kafka'))).toEqual([]);
    expect(attempts(lines)).toBe(1);
    expect(lines.some((l) => l.msg === 'service ready')).toBe(false);
    expect(Date.now() - t0).toBeLessThan(120_000);
  });

  it('a worker alone checks Kafka once too: a wrong password stops it the same way', async () => {
    const { code, stderr, lines } = await exitOf(
      service({
        FULFILMENT_ROLES: 'worker',
        KAFKA_SASL_PASSWORD_FILE: undefined,
        KAFKA_SASL_PASSWORD: 'not-the-password',
      }),
    );
    expect(code).toBe(1);
    expect(stderr).toContain('refused the SASL authentication (SCRAM-SHA-512');
    expect(attempts(lines)).toBe(1);
  });

  it("a CA that did not sign the broker's certificate stops start-up at once, naming KAFKA_SSL_CA_FILE", async () => {
    const other = makeCa(join(tmp, 'other-ca'), 'some other CA');
    const { code, stderr, lines } = await exitOf(service({ KAFKA_SSL_CA_FILE: other.cert }));
    expect(code).toBe(1);
    expect(stderr).toContain(
      `the TLS certificate of Kafka at ${listener.address} was not accepted (SELF_SIGNED_CERT_IN_CHAIN`,
    );
    expect(stderr).toContain(
      `Check KAFKA_SSL_CA_FILE=${other.cert}: it must hold the CA that signed the broker's certificate.`,
    );
    expect(lines.filter((l) => String(l.msg).startsWith('waiting for Kafka'))).toEqual([]);
    expect(attempts(lines)).toBe(1);
  });

  it('a server name the certificate does not carry stops start-up at once, naming KAFKA_SSL_SERVERNAME', async () => {
    const { code, stderr, lines } = await exitOf(
      service({ FULFILMENT_ROLES: 'bridge', KAFKA_SSL_SERVERNAME: 'kafka.elsewhere.example' }),
    );
    expect(code).toBe(1);
    expect(stderr).toContain('(ERR_TLS_CERT_ALTNAME_INVALID: ');
    expect(stderr).toContain(
      "Check KAFKA_SSL_SERVERNAME=kafka.elsewhere.example: it must be a name the broker's certificate carries.",
    );
    expect(attempts(lines)).toBe(1);
  });

  it('an OAUTHBEARER token the broker rejects stops start-up at once, naming KAFKA_SASL_OAUTHBEARER_PROVIDER', async () => {
    const provider = join(tmp, 'bad-token.mjs');
    writeFileSync(provider, 'export default async () => ({ value: "not-a-jwt" });\n');
    const { code, stderr, lines } = await exitOf(
      service({
        FULFILMENT_ROLES: 'bridge',
        KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        KAFKA_SASL_USERNAME: undefined,
        KAFKA_SASL_PASSWORD_FILE: undefined,
        KAFKA_SASL_OAUTHBEARER_PROVIDER: provider,
      }),
    );
    expect(code).toBe(1);
    expect(stderr).toContain(`did not accept the OAUTHBEARER token from KAFKA_SASL_OAUTHBEARER_PROVIDER=${provider}`);
    expect(lines.filter((l) => String(l.msg).startsWith('waiting for Kafka'))).toEqual([]);
  });

  it('a first listed broker that is down does not hold start-up: the next one is tried in the same attempt', async () => {
    // A cluster with one node down, listed first: kafkajs alone (no retries) would try that node on every attempt.
    const p = service({ FULFILMENT_ROLES: 'bridge', KAFKA_BROKERS: `127.0.0.1:1,${listener.address}` });
    await p.said('service ready');
    expect(p.lines.filter((l) => String(l.msg).startsWith('waiting for Kafka'))).toEqual([]);
    expect(await p.stop()).toBe(0);
  });

  it('a broker that is not there is still waited for by the bridge, and not needed by a worker', async () => {
    const bridge = service({ FULFILMENT_ROLES: 'bridge', KAFKA_BROKERS: '127.0.0.1:1' });
    const worker = service({ FULFILMENT_ROLES: 'worker', KAFKA_BROKERS: '127.0.0.1:1' });
    await waitFor(
      'the bridge to try Kafka again',
      () => bridge.lines.filter((l) => String(l.msg).startsWith('waiting for Kafka')).length >= 2,
      90_000,
    );
    await worker.said('service ready');
    expect(worker.lines.some((l) => String(l.msg).includes('is not reachable now; dead letters wait for it'))).toBe(
      true,
    );
    expect(bridge.alive()).toBe(true);
    expect(await bridge.stop()).toBe(0);
    expect(await worker.stop()).toBe(0);
  });
});
