/**
 * The stack is brought up by `npm test` (stack up --for-tests) before vitest; these tests only read it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../tools/stack/paths.js';
import { planFromEnv, stackStatus } from '../../tools/stack/index.js';

const run = promisify(execFile);

describe('stack status', () => {
  it('prints exactly one JSON object with every address on stdout', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'tools/stack/cli.ts', 'status', '--json'], {
      cwd: repoRoot,
    });
    const info = JSON.parse(stdout) as Record<string, unknown>;
    expect(Object.keys(info)).toEqual(
      expect.arrayContaining([
        'kafkaBrokers',
        'temporalAddress',
        'temporalUiUrl',
        'databaseUrl',
        'warehouseUrl',
        'services',
      ]),
    );
    expect(Array.isArray(info.kafkaBrokers)).toBe(true);
    const services = info.services as Record<string, { state: string; address: string }>;
    expect(Object.keys(services).sort()).toEqual(['kafka', 'postgres', 'temporal', 'temporal-tls', 'warehouse']);
    for (const s of Object.values(services)) {
      expect(['running', 'external', 'stopped']).toContain(s.state);
      expect(typeof s.address).toBe('string');
    }
  });

  it("names Kafka's SASL_SSL listener, the CA file that verifies it and the dev user's password file", async () => {
    const info = await stackStatus();
    // With KAFKA_BROKERS set, Kafka is not the stack's and neither is any listener
    if (planFromEnv().kafka.external) return void expect(info.kafkaSaslSsl).toBeUndefined();
    expect(info.kafkaSaslSsl).toMatchObject({
      address: '127.0.0.1:19094',
      mechanisms: ['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN', 'OAUTHBEARER'],
      username: 'fulfilment',
    });
    expect(readFileSync(info.kafkaSaslSsl!.caFile, 'utf8')).toContain('-----BEGIN CERTIFICATE-----');
    expect(readFileSync(info.kafkaSaslSsl!.passwordFile, 'utf8').trim()).not.toBe('');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'tools/stack/cli.ts', 'status'], {
      cwd: repoRoot,
    });
    expect(stdout).toMatch(
      /Kafka SASL_SSL +127\.0\.0\.1:19094 +\(SCRAM-SHA-512, SCRAM-SHA-256, PLAIN, OAUTHBEARER; user fulfilment, password in .*fulfilment\.password\)/,
    );
    expect(
      stdout
        .split('\n')
        .find((l) => l.startsWith('Kafka CA file'))
        ?.split(/ {2,}/)[1],
    ).toBe(info.kafkaSaslSsl!.caFile);
  });

  it('names the TLS Temporal (on demand), its CA file, the client certificate and the API key file', async () => {
    const info = await stackStatus();
    expect(info.temporalTls).toMatchObject({
      address: '127.0.0.1:7253',
      namespace: info.temporalNamespace,
      apiKeyPermissions: [`${info.temporalNamespace}:write`],
    });
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'tools/stack/cli.ts', 'status'], {
      cwd: repoRoot,
    });
    expect(stdout).toMatch(/TLS Temporal +127\.0\.0\.1:7253 +\(mTLS and API keys, namespace /);
    expect(stdout).toContain(info.temporalTls.caFile);
    expect(stdout).toContain(info.temporalTls.apiKeyFile);
  });

  it('reports the services tests depend on as up', async () => {
    const info = await stackStatus();
    for (const name of ['kafka', 'temporal', 'postgres'] as const) {
      const s = info.services[name];
      expect(s.state, `${name}: ${JSON.stringify(s)}`).not.toBe('stopped');
      expect(s.answering, `${name} answers at ${s.address}`).toBe(true);
    }
  });
});
