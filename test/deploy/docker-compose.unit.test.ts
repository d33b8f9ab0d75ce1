/**
 * docker-compose.yml cannot be run on the machines this project is built on (no Docker engine), so its structure is
 * checked here instead, as Compose would see it with deploy/compose/example.env filled in: pinned images,
 * environment names and values that src/base/config.ts accepts, addresses that point at the compose services, the
 * runtime role for the app and the owner role for provisioning only, no password in the file itself, loopback-only
 * publishing unless PUBLISH_ADDRESS opts in, provisioning before the app, readiness healthchecks. The suite also
 * validates the file against the compose-spec schema (test/deploy/manifests.int.test.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { composeExampleEnv, interpolate, loadCompose, readEnvFile } from '../../tools/deploy/validate.js';
import { envProblems, shutdownDeadlineMs } from '../support/deploy-env.js';

interface Service {
  image?: string;
  build?: string | { context?: string };
  command?: string | string[];
  environment?: Record<string, unknown> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  ports?: (string | number | { target: number; published?: string | number; host_ip?: string })[];
  volumes?: (string | { source?: string; target?: string })[];
  healthcheck?: { test?: unknown; disable?: boolean };
  stop_grace_period?: string;
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const composeText = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const initScript = readFileSync(join(root, 'deploy', 'compose', 'postgres-init.sh'), 'utf8');
const exampleEnv = readEnvFile(composeExampleEnv);
const exampleEnvText = readFileSync(composeExampleEnv, 'utf8');

/** example.env as a user fills it in: every empty password set (URL-safe, as the file asks). */
const filledEnv: Record<string, string> = Object.fromEntries(
  Object.entries(exampleEnv).map(([k, v]) => [k, v === '' ? `pw-${k.toLowerCase().replace(/_/g, '-')}` : v]),
);

/** The file as written (variables not interpolated), and as Compose sees it with the filled-in env. */
const raw = (parse(composeText, { merge: true }) as { services?: Record<string, Service> }).services ?? {};
const services = (loadCompose(filledEnv) as { services?: Record<string, Service> }).services ?? {};

/** Services built from this repository: they run the app, so their environment is the app's configuration. */
const appServices = Object.entries(services).filter(([, s]) => {
  const context = typeof s.build === 'string' ? s.build : s.build?.context;
  return context !== undefined && ['.', './'].includes(context);
});

/** A service's environment as name → value; a name without a value (taken from the host) maps to undefined. */
function envOf(s: Service | undefined): Record<string, string | undefined> {
  const env = s?.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((e) => (e.includes('=') ? [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] : [e, undefined])),
    );
  }
  return Object.fromEntries(
    Object.entries(env).map(([k, v]) => [k, v === null || v === undefined ? undefined : String(v)]),
  );
}

/** Command tokens, with `--flag=value` split into `--flag`, `value`. */
function commandTokens(s: Service): string[] {
  const cmd = typeof s.command === 'string' ? s.command.split(/\s+/).filter(Boolean) : (s.command ?? []);
  return cmd.flatMap((t) =>
    t.startsWith('--') && t.includes('=') ? [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)] : [t],
  );
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

/** Published ports of a service: host interface (undefined: every interface), host port, container port. */
function published(s: Service | undefined): { hostIp: string | undefined; port: number; target: number }[] {
  return (s?.ports ?? []).flatMap((p) => {
    if (typeof p === 'object')
      return p.published === undefined ? [] : [{ hostIp: p.host_ip, port: Number(p.published), target: p.target }];
    const parts = String(p)
      .replace(/\/(tcp|udp)$/, '')
      .split(':');
    if (parts.length < 2) return [];
    return [
      {
        hostIp: parts.length >= 3 ? parts.slice(0, -2).join(':') : undefined,
        port: Number(parts.at(-2)),
        target: Number(parts.at(-1)),
      },
    ];
  });
}

const depsOf = (s: Service | undefined): Record<string, { condition?: string }> => {
  const deps = s?.depends_on ?? {};
  return Array.isArray(deps) ? Object.fromEntries(deps.map((d) => [d, {}])) : deps;
};

const hostPort = (v: string) => {
  const [host = '', port = ''] = v.split(':');
  return { host, port: Number(port) };
};

const seconds = (d: string | undefined): number => {
  const m = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(d ?? '');
  return m ? Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0) : Number.NaN;
};

describe('docker-compose.yml', () => {
  it('has the stack, the provisioning one-shot and the app services', () => {
    expect(Object.keys(services).sort()).toEqual([
      'bridge',
      'kafka',
      'lag-exporter',
      'postgres',
      'provision',
      'temporal',
      'warehouse',
      'worker',
    ]);
    expect(appServices.map(([name]) => name).sort()).toEqual([
      'bridge',
      'lag-exporter',
      'provision',
      'warehouse',
      'worker',
    ]);
    expect(envOf(services.worker).FULFILMENT_ROLES).toBe('worker');
    expect(envOf(services.bridge).FULFILMENT_ROLES).toBe('bridge');
  });

  it('pins every image to a version', () => {
    const problems = Object.entries(services).flatMap(([name, s]) => {
      if (s.image === undefined) return s.build === undefined ? [`${name}: neither image nor build`] : [];
      return isPinned(s.image) ? [] : [`${name}: ${s.image} is not pinned`];
    });
    expect(problems).toEqual([]);
  });

  it('gives the app services only variables of src/base/config.ts, with values it accepts', () => {
    expect(appServices.flatMap(([name, s]) => envProblems(name, envOf(s)))).toEqual([]);
  });

  it.each(['worker', 'bridge', 'provision'])(
    'runs %s in production mode with every address set, so it never falls back to a local default',
    (name) => {
      const env = envOf(services[name]);
      expect(env.NODE_ENV).toBe('production');
      for (const key of ['KAFKA_BROKERS', 'TEMPORAL_ADDRESS', 'DATABASE_URL', 'WAREHOUSE_URL'])
        expect(env[key], key).toBeTruthy();
    },
  );

  it.each(['worker', 'bridge'])(
    'points %s at the compose services, on the ports they listen on, as the runtime role',
    (name) => {
      const env = envOf(services[name]);

      // Kafka: every broker is the kafka service and is what the broker advertises.
      const advertised = envOf(services.kafka).KAFKA_ADVERTISED_LISTENERS ?? '';
      for (const broker of (env.KAFKA_BROKERS ?? '').split(',')) {
        expect(Object.keys(services)).toContain(hostPort(broker).host);
        expect(advertised).toContain(`//${broker.trim()}`);
      }

      // Temporal: the temporal service, listening on all interfaces of its container.
      expect(hostPort(env.TEMPORAL_ADDRESS ?? '').host).toBe('temporal');
      const temporalArgs = commandTokens(services.temporal ?? {});
      expect(temporalArgs[temporalArgs.indexOf('--ip') + 1]).toBe('0.0.0.0');
      // Dispatching fairly between tenants, as the stack's Temporal does (src/base/tenants/fairness.ts).
      expect(temporalArgs[temporalArgs.indexOf('--dynamic-config-value') + 1]).toBe('matching.enableFairness=true');

      // PostgreSQL: the postgres service and its database, as the runtime role with the password .env gives it —
      // never the image's superuser (POSTGRES_USER, default postgres), never the owner.
      const db = new URL(env.DATABASE_URL ?? '');
      const pg = envOf(services.postgres);
      expect(db.hostname).toBe('postgres');
      expect(db.port || '5432').toBe('5432');
      expect(decodeURIComponent(db.username)).toBe('fulfilment');
      expect(decodeURIComponent(db.username)).not.toBe(pg.POSTGRES_USER ?? 'postgres');
      expect(decodeURIComponent(db.password)).toBe(filledEnv.FULFILMENT_DB_PASSWORD);
      expect(decodeURIComponent(db.password)).toBe(pg.FULFILMENT_DB_PASSWORD);
      expect(db.pathname.slice(1)).toBe(pg.POSTGRES_DB);
      expect(env.DATABASE_MIGRATION_URL, 'the owner role is for provisioning only').toBeUndefined();

      // Warehouse: the warehouse service, on the port it is told to listen on.
      const wh = new URL(env.WAREHOUSE_URL ?? '');
      expect(wh.hostname).toBe('warehouse');
      expect(Number(wh.port)).toBe(Number(envOf(services.warehouse).WAREHOUSE_PORT ?? 18080));
    },
  );

  it('provisions as the owner role, which the PostgreSQL init script creates beside the runtime role', () => {
    const env = envOf(services.provision);
    const owner = new URL(env.DATABASE_MIGRATION_URL ?? '');
    const runtime = new URL(env.DATABASE_URL ?? '');
    expect(decodeURIComponent(owner.username)).toBe('fulfilment_owner');
    expect(decodeURIComponent(owner.password)).toBe(envOf(services.postgres).FULFILMENT_OWNER_PASSWORD);
    expect([owner.hostname, owner.pathname]).toEqual([runtime.hostname, runtime.pathname]);
    expect(runtime.username).toBe(new URL(envOf(services.worker).DATABASE_URL ?? '').username);

    // The init script is mounted where the image runs it, and makes both roles unable to bypass RLS.
    const mounts = (services.postgres?.volumes ?? []).map((v) =>
      typeof v === 'string' ? v : `${v.source}:${v.target}`,
    );
    const init = mounts.find((m) => m.includes(':/docker-entrypoint-initdb.d/'));
    expect(init, 'init script mounted into /docker-entrypoint-initdb.d').toBeDefined();
    expect(existsSync(join(root, (init ?? '').split(':')[0] ?? ''))).toBe(true);
    for (const role of ['fulfilment_owner', 'fulfilment']) {
      const create = new RegExp(`^CREATE ROLE ${role} (.*);$`, 'm').exec(initScript)?.[1] ?? '';
      expect(create, role).toMatch(/\bLOGIN\b/);
      for (const attr of ['NOSUPERUSER', 'NOBYPASSRLS', 'NOCREATEROLE'])
        expect(create, `${role} ${attr}`).toContain(attr);
    }
    expect(initScript).toMatch(/ALTER DATABASE :"db" OWNER TO fulfilment_owner;/);
    // Every variable the script reads reaches the postgres service.
    for (const v of initScript.matchAll(/"\$\{?([A-Z_]+)/g))
      expect(Object.keys(envOf(services.postgres)).concat('POSTGRES_USER'), v[1]).toContain(v[1]);
  });

  it('writes no password in the file: each comes from .env, and Compose refuses to start without it', () => {
    const secretRef = /^\$\{([A-Z_]+):\?[^}]+\}$/;
    const problems = Object.entries(raw).flatMap(([name, s]) =>
      Object.entries(envOf(s)).flatMap(([key, value = '']) => {
        if (/PASSWORD/.test(key) && !secretRef.test(value)) return [`${name}: ${key} is not \${VAR:?...} from .env`];
        const userinfo = /^[a-z]+:\/\/[^/@:]+:([^@]*)@/.exec(value)?.[1];
        if (userinfo !== undefined && !secretRef.test(userinfo))
          return [`${name}: ${key} has a password written in the file`];
        return [];
      }),
    );
    expect(problems).toEqual([]);
    // Every variable the file interpolates is in example.env; the passwords there are empty, so nothing default ships.
    for (const m of composeText.replace(/^\s*#.*$/gm, '').matchAll(/\$\{([A-Z_]+)/g))
      expect(exampleEnvText, `${m[1]} is documented in example.env`).toContain(`${m[1]}=`);
    for (const [k, v] of Object.entries(exampleEnv)) if (/PASSWORD/.test(k)) expect(v, k).toBe('');
    expect(() => loadCompose(exampleEnv)).toThrow(
      /required variable POSTGRES_PASSWORD is missing a value: set POSTGRES_PASSWORD in \.env/,
    );
    // The filled-in copy stays out of git and out of the image.
    for (const ignore of ['.gitignore', '.dockerignore'])
      expect(readFileSync(join(root, ignore), 'utf8').split('\n'), ignore).toContain('.env');
  });

  it('publishes ports on 127.0.0.1 only unless PUBLISH_ADDRESS opts in', () => {
    const all = Object.entries(services).flatMap(([name, s]) => published(s).map((p) => ({ name, ...p })));
    expect(all.length).toBeGreaterThan(0);
    expect(all.filter((p) => p.hostIp !== '127.0.0.1')).toEqual([]);
    for (const [, s] of Object.entries(raw))
      for (const p of s.ports ?? []) expect(String(p)).toMatch(/^\$\{PUBLISH_ADDRESS:-127\.0\.0\.1\}:\d+:\d+$/);
    const optedIn = (loadCompose({ ...filledEnv, PUBLISH_ADDRESS: '0.0.0.0' }) as { services: Record<string, Service> })
      .services;
    expect(published(optedIn.temporal).map((p) => p.hostIp)).toEqual(['0.0.0.0', '0.0.0.0']);
  });

  it('publishes the Temporal Web UI on the port the app links to', () => {
    const ui = published(services.temporal).find((p) => p.target === 8233);
    expect(ui?.port).toBe(8233);
    const link = new URL(envOf(services.worker).TEMPORAL_UI_URL ?? 'http://localhost:8233');
    expect(ui?.port).toBe(Number(link.port));
    expect(link.hostname).toBe('localhost');
  });

  it('provisions before the worker and the bridge start, once the stack is healthy', () => {
    const provision = services.provision ?? {};
    expect(commandTokens(provision).slice(0, 3)).toEqual(['node', 'bin/fulfilment.mjs', 'provision']);
    expect(commandTokens(provision)).not.toContain('--only');
    expect(
      Object.entries(depsOf(provision))
        .map(([d, o]) => `${d}:${o.condition}`)
        .sort(),
    ).toEqual(['kafka:service_healthy', 'postgres:service_healthy', 'temporal:service_healthy']);
    for (const name of ['worker', 'bridge']) {
      const deps = depsOf(services[name]);
      expect(deps.provision?.condition, name).toBe('service_completed_successfully');
      expect(Object.keys(deps).sort()).toEqual(['kafka', 'postgres', 'provision', 'temporal', 'warehouse']);
    }
    // Topics come from provisioning, not from a consumer subscribing.
    expect(envOf(services.kafka).KAFKA_AUTO_CREATE_TOPICS_ENABLE).toBe('false');
  });

  it.each(['worker', 'bridge'])(
    'checks %s through /readyz on its METRICS_PORT and gives it longer than its shutdown deadline',
    (name) => {
      const s = services[name] ?? {};
      const env = envOf(s);
      const test = JSON.stringify(s.healthcheck?.test ?? []);
      expect(test).toContain(`http://127.0.0.1:${env.METRICS_PORT}/readyz`);
      expect(env.METRICS_HOST).toBe('0.0.0.0');
      expect(seconds(s.stop_grace_period) * 1000).toBeGreaterThan(shutdownDeadlineMs(env));
    },
  );

  it('runs the lag exporter in production mode against Kafka only, checked through /readyz on its LAG_EXPORTER_PORT', () => {
    const s = services['lag-exporter'] ?? {};
    const env = envOf(s);
    expect(commandTokens(s)).toEqual(['node', 'bin/fulfilment.mjs', 'lag-exporter']);
    expect(env.NODE_ENV).toBe('production');
    expect(env.METRICS_HOST).toBe('0.0.0.0');
    expect(JSON.stringify(s.healthcheck?.test ?? [])).toContain(`http://127.0.0.1:${env.LAG_EXPORTER_PORT}/readyz`);
    expect(Object.keys(depsOf(s)).sort()).toEqual(['kafka', 'provision']);
  });

  it('depends only on services that exist, waiting for health only where there is a healthcheck', () => {
    const problems = Object.entries(services).flatMap(([name, s]) =>
      Object.entries(depsOf(s)).flatMap(([dep, opts]) => {
        const target = services[dep];
        if (!target) return [`${name} depends on unknown service ${dep}`];
        if (opts.condition === 'service_healthy' && (!target.healthcheck?.test || target.healthcheck.disable))
          return [`${name} waits for ${dep} to be healthy, but it has no healthcheck`];
        return [];
      }),
    );
    expect(problems).toEqual([]);
  });

  it('runs files of this repository that exist', () => {
    const files = appServices.flatMap(([, s]) => commandTokens(s).filter((t) => /\.(ts|mjs)$/.test(t)));
    const cmd = /^CMD\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1];
    expect(cmd, 'Dockerfile has an exec-form CMD').toBeDefined();
    // The image runs what its build stage emitted: dist/x.js is built from x.ts.
    files.push(
      ...(JSON.parse(cmd ?? '[]') as string[])
        .filter((t) => t.endsWith('.js'))
        .map((t) => t.replace(/^dist\//, '').replace(/\.js$/, '.ts')),
    );
    expect(files).toEqual(expect.arrayContaining(['src/service.ts', 'bin/fulfilment.mjs', 'tools/warehouse/main.ts']));
    for (const f of files) expect(existsSync(join(root, f)), f).toBe(true);
  });

  it('interpolates as Compose does', () => {
    expect(interpolate('a${X}b$${Y}${Z:-d}${W-e}', { X: '1', Z: '', W: '' })).toBe('a1b${Y}d');
    expect(() => interpolate('${X:?say why}', { X: '' })).toThrow('required variable X is missing a value: say why');
    expect(interpolate('${X?why}', { X: '' })).toBe('');
  });
});

describe('Dockerfile', () => {
  const bases = [...dockerfile.matchAll(/^FROM\s+(?:--platform=\S+\s+)?(\S+)/gm)].map((m) => m[1] ?? '');

  it('builds on a pinned glibc Node 24 image', () => {
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) {
      expect(isPinned(base), `${base} is pinned`).toBe(true);
      // The Temporal core-bridge ships prebuilt binaries for linux-gnu only.
      expect(base, `${base} is not Alpine (musl)`).not.toMatch(/alpine/);
    }
    expect(bases.at(-1)).toMatch(/^node:24\.\d+\.\d+-bookworm-slim$/);
  });

  it('runs the service alone, in production mode, as a non-root user', () => {
    expect(JSON.parse(/^CMD\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1] ?? '[]')).toEqual(['node', 'dist/src/service.js']);
    // dist/ comes from the build stage (`npm run build`), never from the machine that builds the image.
    expect(dockerfile).toMatch(/^RUN npm run build$/m);
    expect(dockerfile).toMatch(/^COPY --from=build .*\/dist \.\/dist$/m);
    expect(readFileSync(join(root, '.dockerignore'), 'utf8')).toMatch(/^dist$/m);
    expect(dockerfile).toMatch(/^ENV NODE_ENV=production$/m);
    const user = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].at(-1)?.[1] ?? 'root';
    // Numeric, so Kubernetes' runAsNonRoot can verify it; and not root.
    expect(user).toMatch(/^[1-9]\d*(:\d+)?$/);
  });
});
