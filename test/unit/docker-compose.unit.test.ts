/**
 * docker-compose.yml cannot be run on the machines this project is built on (no Docker engine), so its structure is
 * checked here instead: pinned images, environment names and values that src/config.ts accepts, addresses that point
 * at the compose services, credentials that agree, dependencies that exist, and the Temporal Web UI published.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configSchema } from '../../src/config.js';
import { SEARCH_ATTRIBUTES } from '../../src/provision/temporal.js';

interface Service {
  image?: string;
  build?: string | { context?: string };
  command?: string | string[];
  environment?: Record<string, unknown> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  ports?: (string | number | { target: number; published?: string | number })[];
  healthcheck?: { test?: unknown; disable?: boolean };
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services?: Record<string, Service> };
const services: Record<string, Service> = compose.services ?? {};
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

/** Schemas by variable name, as src/config.ts validates them. */
const schemas: Record<string, { safeParse(value: unknown): { success: boolean } }> = configSchema;

/** Services built from this repository: they run the app, so their environment is the app's configuration. */
const appServices = Object.entries(services).filter(([, s]) => {
  const context = typeof s.build === 'string' ? s.build : s.build?.context;
  return context !== undefined && ['.', './'].includes(context);
});

/** A service's environment as name → value; a name without a value (taken from the host) maps to undefined. */
function envOf(s: Service): Record<string, string | undefined> {
  const env = s.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((e) => (e.includes('=') ? [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] : [e, undefined])));
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null || v === undefined ? undefined : String(v)]));
}

/** Command tokens, with `--flag=value` split into `--flag`, `value`. */
function commandTokens(s: Service): string[] {
  const raw = typeof s.command === 'string' ? s.command.split(/\s+/).filter(Boolean) : (s.command ?? []);
  return raw.flatMap((t) => (t.startsWith('--') && t.includes('=') ? [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)] : [t]));
}

/** Pinned: a digest, or a tag carrying a version (major.minor at least) — never `latest` or no tag at all. */
function isPinned(ref: string): boolean {
  if (/@sha256:[0-9a-f]{64}$/.test(ref)) return true;
  const name = ref.split('@')[0] ?? '';
  const colon = name.indexOf(':', name.lastIndexOf('/') + 1);
  if (colon === -1) return false;
  const tag = name.slice(colon + 1);
  return tag !== 'latest' && /\d+\.\d+/.test(tag);
}

/** Host ports a service publishes, by container port. */
function published(s: Service): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of s.ports ?? []) {
    if (typeof p === 'object') {
      if (p.published !== undefined) out.set(p.target, Number(p.published));
      continue;
    }
    const parts = String(p).replace(/\/(tcp|udp)$/, '').split(':');
    const target = Number(parts.at(-1));
    if (parts.length >= 2) out.set(target, Number(parts.at(-2)));
  }
  return out;
}

const hostPort = (v: string) => {
  const [host = '', port = ''] = v.split(':');
  return { host, port: Number(port) };
};

describe('docker-compose.yml', () => {
  it('has the stack and the app services', () => {
    expect(Object.keys(services).sort()).toEqual(expect.arrayContaining(['bridge', 'kafka', 'postgres', 'temporal', 'warehouse', 'worker']));
    expect(appServices.map(([name]) => name).sort()).toEqual(['bridge', 'warehouse', 'worker']);
    expect(envOf(services.worker ?? {}).FULFILMENT_ROLES).toBe('worker');
    expect(envOf(services.bridge ?? {}).FULFILMENT_ROLES).toBe('bridge');
  });

  it('pins every image to a version', () => {
    const problems = Object.entries(services).flatMap(([name, s]) => {
      if (s.image === undefined) return s.build === undefined ? [`${name}: neither image nor build`] : [];
      return isPinned(s.image) ? [] : [`${name}: ${s.image} is not pinned`];
    });
    expect(problems).toEqual([]);
  });

  it('gives the app services only variables of src/config.ts, with values it accepts', () => {
    const problems = appServices.flatMap(([name, s]) =>
      Object.entries(envOf(s)).flatMap(([key, value]) => {
        const schema = schemas[key];
        if (!schema) return [`${name}: ${key} is not a variable of src/config.ts`];
        if (value === undefined) return [`${name}: ${key} has no value`];
        return schema.safeParse(value).success ? [] : [`${name}: ${key}=${JSON.stringify(value)} is rejected by src/config.ts`];
      }),
    );
    expect(problems).toEqual([]);
  });

  it.each(['worker', 'bridge'])('sets the four service addresses of %s explicitly, so it starts none of them itself', (name) => {
    const env = envOf(services[name] ?? {});
    for (const key of ['KAFKA_BROKERS', 'TEMPORAL_ADDRESS', 'DATABASE_URL', 'WAREHOUSE_URL']) expect(env[key], key).toBeTruthy();
  });

  it.each(['worker', 'bridge'])('points %s at the compose services, on the ports they listen on', (name) => {
    const env = envOf(services[name] ?? {});

    // Kafka: every broker is the kafka service and is what the broker advertises.
    const advertised = envOf(services.kafka ?? {}).KAFKA_ADVERTISED_LISTENERS ?? '';
    for (const broker of (env.KAFKA_BROKERS ?? '').split(',')) {
      expect(Object.keys(services)).toContain(hostPort(broker).host);
      expect(advertised).toContain(`//${broker.trim()}`);
    }

    // Temporal: the temporal service, listening on all interfaces.
    expect(hostPort(env.TEMPORAL_ADDRESS ?? '').host).toBe('temporal');
    const temporalArgs = commandTokens(services.temporal ?? {});
    expect(temporalArgs[temporalArgs.indexOf('--ip') + 1]).toBe('0.0.0.0');

    // PostgreSQL: the postgres service, with the credentials and database it is created with.
    const db = new URL(env.DATABASE_URL ?? '');
    const pg = envOf(services.postgres ?? {});
    expect(db.hostname).toBe('postgres');
    expect(db.port || '5432').toBe('5432');
    expect(decodeURIComponent(db.username)).toBe(pg.POSTGRES_USER);
    expect(decodeURIComponent(db.password)).toBe(pg.POSTGRES_PASSWORD);
    expect(db.pathname.slice(1)).toBe(pg.POSTGRES_DB ?? pg.POSTGRES_USER);

    // Warehouse: the warehouse service, on the port it is told to listen on.
    const wh = new URL(env.WAREHOUSE_URL ?? '');
    expect(wh.hostname).toBe('warehouse');
    expect(Number(wh.port)).toBe(Number(envOf(services.warehouse ?? {}).WAREHOUSE_PORT ?? 18080));
  });

  it('publishes the Temporal Web UI on the port the app links to', () => {
    const ports = published(services.temporal ?? {});
    expect(ports.get(8233)).toBe(8233);
    const ui = new URL(envOf(services.worker ?? {}).TEMPORAL_UI_URL ?? 'http://localhost:8233');
    expect(ports.get(8233)).toBe(Number(ui.port));
    expect(ui.hostname).toBe('localhost');
  });

  it('registers the search attributes the workflows use when Temporal starts', () => {
    const args = commandTokens(services.temporal ?? {});
    const registered = args.flatMap((t, i) => (t === '--search-attribute' ? [args[i + 1]] : []));
    expect(registered.sort()).toEqual(Object.entries(SEARCH_ATTRIBUTES).map(([k, v]) => `${k}=${v}`).sort());
  });

  it('depends only on services that exist, waiting for health only where there is a healthcheck', () => {
    const problems = Object.entries(services).flatMap(([name, s]) => {
      const deps = Array.isArray(s.depends_on) ? Object.fromEntries(s.depends_on.map((d) => [d, {}])) : (s.depends_on ?? {});
      return Object.entries(deps).flatMap(([dep, opts]: [string, { condition?: string }]) => {
        const target = services[dep];
        if (!target) return [`${name} depends on unknown service ${dep}`];
        if (opts.condition === 'service_healthy' && (!target.healthcheck?.test || target.healthcheck.disable)) return [`${name} waits for ${dep} to be healthy, but it has no healthcheck`];
        return [];
      });
    });
    expect(problems).toEqual([]);
    for (const name of ['worker', 'bridge']) {
      const deps = services[name]?.depends_on ?? {};
      expect(Object.keys(Array.isArray(deps) ? Object.fromEntries(deps.map((d) => [d, 1])) : deps).sort()).toEqual(['kafka', 'postgres', 'temporal', 'warehouse']);
    }
  });

  it('runs TypeScript files of this repository that exist', () => {
    const files = appServices.flatMap(([, s]) => commandTokens(s).filter((t) => t.endsWith('.ts')));
    const cmd = /^CMD\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1];
    expect(cmd, 'Dockerfile has an exec-form CMD').toBeDefined();
    files.push(...(JSON.parse(cmd ?? '[]') as string[]).filter((t) => t.endsWith('.ts')));
    expect(files).toContain('tools/start.ts');
    for (const f of files) expect(existsSync(join(root, f)), f).toBe(true);
  });
});

describe('Dockerfile', () => {
  it('builds on a pinned glibc Node image', () => {
    const bases = [...dockerfile.matchAll(/^FROM\s+(?:--platform=\S+\s+)?(\S+)/gm)].map((m) => m[1] ?? '');
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) {
      expect(isPinned(base), `${base} is pinned`).toBe(true);
      // The Temporal core-bridge ships prebuilt binaries for linux-gnu only.
      expect(base, `${base} is not Alpine (musl)`).not.toMatch(/alpine/);
    }
    expect(bases[0]).toMatch(/^node:/);
  });
});
