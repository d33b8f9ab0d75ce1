/**
 * Turns the project configuration (src/base/config.ts) into what the local stack listens on.
 * A service whose address variable is set explicitly in the environment is "external": used as given, never started.
 * Pure but for what loadConfig reads (a Temporal profile file, when there is one), so it can be unit-tested.
 */
import { loadConfig, type Config } from '../../src/base/config.js';
import { StackError } from './log.js';

export const SERVICE_NAMES = ['postgres', 'kafka', 'temporal', 'warehouse', 'temporal-tls'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
/** Started only when asked for by name (`up --only temporal-tls`, or a test that needs it); `down` stops them too. */
export const ON_DEMAND: readonly ServiceName[] = ['temporal-tls'];

export interface HostPort {
  host: string;
  port: number;
}

/** Parses `host:port` or `[v6]:port`. */
export function parseHostPort(value: string): HostPort {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(value.trim()) ?? /^([^:\s]+):(\d+)$/.exec(value.trim());
  if (!m) throw new Error(`expected host:port, got ${JSON.stringify(value)}`);
  const port = Number(m[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`bad port in ${JSON.stringify(value)}`);
  return { host: m[1] ?? '', port };
}

/** Host and port of a URL, with the protocol's default port when none is given. */
export function urlHostPort(value: string): HostPort {
  const u = new URL(value);
  const defaults: Record<string, number> = { 'http:': 80, 'https:': 443, 'postgres:': 5432, 'postgresql:': 5432 };
  const port = u.port ? Number(u.port) : (defaults[u.protocol] ?? 0);
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

/** One Kafka node of the stack: its client (PLAINTEXT) listener and its controller listener. */
export interface KafkaNodePlan extends HostPort {
  id: number;
  controllerPort: number;
}

/** Which Kafka the stack runs (STACK_KAFKA): one combined broker (default), or three nodes replicating every topic. */
export type KafkaKind = 'broker' | 'cluster';

/** Nodes of the stack's Kafka cluster (STACK_KAFKA=cluster). */
export const KAFKA_CLUSTER_NODES = 3;

export interface StackPlan {
  kafka: HostPort & {
    kind: KafkaKind;
    /** The cluster's nodes each in a network namespace of its own (STACK_KAFKA_NETNS=1). */
    netns: boolean;
    /**
     * The nodes the stack runs: one for `broker`; three for `cluster`, node n on the broker port + 3(n-1) and its
     * controller one above.
     */
    nodes: KafkaNodePlan[];
    brokers: string[];
    controllerPort: number;
    /** The SASL_SSL listener (SCRAM), on the same host: broker port + 2. */
    saslSslPort: number;
    external: boolean;
    ordersTopic: string;
    ordersPartitions: number;
    dlqTopic: string;
    statusTopic: string;
    statusPartitions: number;
    clientId: string;
  };
  /** `settings`: TLS, API key and metadata too, for the stack's own calls to an external (maybe secured) Temporal. */
  temporal: HostPort & {
    address: string;
    namespace: string;
    uiUrl: string;
    ui: HostPort;
    external: boolean;
    settings: Config['temporal'];
    /** Which Temporal the stack runs (STACK_TEMPORAL): the dev server (default) or the Temporal server on PostgreSQL. */
    kind: TemporalKind;
    /** History shards of the Temporal server (STACK_TEMPORAL_SHARDS, default 8); fixed once its database exists. */
    shards: number;
    /** The Temporal server's services in one process (default) or one process each (STACK_TEMPORAL_PROCESSES=split). */
    processes: 'one' | 'split';
  };
  postgres: HostPort & {
    /** The runtime role's URL (DATABASE_URL). */
    url: string;
    user: string;
    password: string;
    database: string;
    /** The owner role's URL (DATABASE_MIGRATION_URL), which applies the migrations. */
    ownerUrl: string | undefined;
    owner: string;
    ownerPassword: string;
    external: boolean;
  };
  warehouse: HostPort & { url: string; listenPort: number; external: boolean };
  /**
   * The Temporal server whose frontend serves TLS and requires client certificates and API keys (on demand), on
   * loopback: the frontend on `port` (STACK_TEMPORAL_TLS_PORT, default 7253), its JSON Web Key Set on `jwksPort`.
   */
  temporalTls: HostPort & { address: string; jwksPort: number; namespace: string };
}

export type TemporalKind = 'dev' | 'server';

/** STACK_TEMPORAL, STACK_TEMPORAL_SHARDS, STACK_TEMPORAL_PROCESSES: which Temporal the local stack runs, and how. */
export function temporalKindFromEnv(env: NodeJS.ProcessEnv = process.env): {
  kind: TemporalKind;
  shards: number;
  processes: 'one' | 'split';
} {
  const kind = (env.STACK_TEMPORAL ?? '').trim() || 'dev';
  if (kind !== 'dev' && kind !== 'server')
    throw new StackError(`STACK_TEMPORAL must be dev or server, got ${JSON.stringify(kind)}`);
  const shardsText = (env.STACK_TEMPORAL_SHARDS ?? '').trim() || '8';
  const shards = Number(shardsText);
  if (!/^\d+$/.test(shardsText) || shards < 1 || shards > 16384)
    throw new StackError(
      `STACK_TEMPORAL_SHARDS must be a whole number from 1 to 16384, got ${JSON.stringify(shardsText)}`,
    );
  const processes = (env.STACK_TEMPORAL_PROCESSES ?? '').trim() || 'one';
  if (processes !== 'one' && processes !== 'split')
    throw new StackError(`STACK_TEMPORAL_PROCESSES must be one or split, got ${JSON.stringify(processes)}`);
  return { kind, shards, processes };
}

/** STACK_TEMPORAL_TLS_PORT: the TLS Temporal's frontend port (the next ports up to +10 are its other services'). */
export function temporalTlsPortFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const text = (env.STACK_TEMPORAL_TLS_PORT ?? '').trim() || '7253';
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1024 || port > 65_000)
    throw new StackError(`STACK_TEMPORAL_TLS_PORT must be a port from 1024 to 65000, got ${JSON.stringify(text)}`);
  return port;
}

/** STACK_KAFKA: `broker` (default) or `cluster`. */
export function kafkaKindFromEnv(env: NodeJS.ProcessEnv = process.env): KafkaKind {
  const kind = (env.STACK_KAFKA ?? '').trim() || 'broker';
  if (kind !== 'broker' && kind !== 'cluster')
    throw new StackError(`STACK_KAFKA must be broker or cluster, got ${JSON.stringify(kind)}`);
  return kind;
}

/**
 * STACK_KAFKA_NETNS=1: each node of the cluster in a network namespace of its own, linked to the stack's by a virtual
 * cable, so that one can be cut off (`kafka-node cut <n>`). Needs root and `ip`; nodes then listen on 198.18.<n>.2,
 * an address of the range set aside for such test networks (RFC 2544).
 */
export function kafkaNetnsFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = (env.STACK_KAFKA_NETNS ?? '').trim();
  if (v !== '' && v !== '0' && v !== '1')
    throw new StackError(`STACK_KAFKA_NETNS must be 0 or 1, got ${JSON.stringify(v)}`);
  return v === '1';
}

/** The address node `id` listens on in its own network namespace (STACK_KAFKA_NETNS=1); the stack's end is .1. */
export const nodeNetnsAddress = (id: number, end: 1 | 2 = 2): string => `198.18.${id}.${end}`;

/** The nodes of a stack Kafka of `kind` whose first broker listens on `first`; each in a namespace with `netns`. */
export function kafkaNodes(kind: KafkaKind, first: HostPort, netns = false): KafkaNodePlan[] {
  const count = kind === 'cluster' ? KAFKA_CLUSTER_NODES : 1;
  return Array.from({ length: count }, (_, i) => {
    const port = first.port + 3 * i;
    const host = kind === 'cluster' && netns ? nodeNetnsAddress(i + 1) : first.host;
    return { id: i + 1, host, port, controllerPort: port + 1 };
  });
}

const isSet = (env: NodeJS.ProcessEnv, name: string): boolean => (env[name] ?? '').trim() !== '';

export function planFromEnv(env: NodeJS.ProcessEnv = process.env): StackPlan {
  const c = loadConfig(env);
  const broker = parseHostPort(c.KAFKA_BROKERS[0] ?? '127.0.0.1:19092');
  const kafkaKind = kafkaKindFromEnv(env);
  const netns = kafkaKind === 'cluster' && kafkaNetnsFromEnv(env);
  const nodes = kafkaNodes(kafkaKind, broker, netns);
  const nodeAddresses = nodes.map((n) => `${n.host}:${n.port}`);
  // A cluster's clients bootstrap from every node, so that any one of them may be down; KAFKA_BROKERS naming exactly
  // the stack's nodes (as the suite's processes are given them) is the stack's own cluster, not an external one.
  const brokersSet = isSet(env, 'KAFKA_BROKERS');
  const ownCluster = kafkaKind === 'cluster' && (!brokersSet || c.KAFKA_BROKERS.join(',') === nodeAddresses.join(','));
  const temporal = parseHostPort(c.TEMPORAL_ADDRESS);
  const pgUrl = new URL(c.DATABASE_URL);
  const pg = urlHostPort(c.DATABASE_URL);
  const wh = urlHostPort(c.WAREHOUSE_URL);
  return {
    kafka: {
      ...broker,
      kind: kafkaKind,
      netns,
      nodes,
      brokers: kafkaKind === 'cluster' && ownCluster ? nodeAddresses : c.KAFKA_BROKERS,
      controllerPort: broker.port + 1,
      saslSslPort: broker.port + 2,
      external: kafkaKind === 'cluster' ? !ownCluster : brokersSet,
      ordersTopic: c.ORDERS_TOPIC,
      ordersPartitions: c.ORDERS_TOPIC_PARTITIONS,
      dlqTopic: c.DLQ_TOPIC,
      statusTopic: c.STATUS_TOPIC,
      statusPartitions: c.STATUS_TOPIC_PARTITIONS,
      clientId: c.KAFKA_CLIENT_ID,
    },
    temporal: {
      ...temporal,
      address: c.TEMPORAL_ADDRESS,
      namespace: c.TEMPORAL_NAMESPACE,
      uiUrl: c.TEMPORAL_UI_URL,
      ui: urlHostPort(c.TEMPORAL_UI_URL),
      // Set by TEMPORAL_ADDRESS or by a Temporal profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE).
      external: c.temporal.addressFrom !== 'the local default',
      settings: c.temporal,
      ...temporalKindFromEnv(env),
    },
    postgres: {
      ...pg,
      url: c.DATABASE_URL,
      user: decodeURIComponent(pgUrl.username) || 'postgres',
      password: decodeURIComponent(pgUrl.password),
      database: decodeURIComponent(pgUrl.pathname.replace(/^\//, '')) || 'postgres',
      ownerUrl: c.DATABASE_MIGRATION_URL,
      owner: c.DATABASE_MIGRATION_URL ? decodeURIComponent(new URL(c.DATABASE_MIGRATION_URL).username) : '',
      ownerPassword: c.DATABASE_MIGRATION_URL ? decodeURIComponent(new URL(c.DATABASE_MIGRATION_URL).password) : '',
      external: isSet(env, 'DATABASE_URL'),
    },
    warehouse: {
      ...wh,
      url: c.WAREHOUSE_URL.replace(/\/+$/, ''),
      // the local warehouse listens where WAREHOUSE_URL points unless WAREHOUSE_PORT says otherwise
      listenPort: isSet(env, 'WAREHOUSE_PORT') ? c.WAREHOUSE_PORT : wh.port,
      external: isSet(env, 'WAREHOUSE_URL'),
    },
    temporalTls: (() => {
      const port = temporalTlsPortFromEnv(env);
      return {
        host: '127.0.0.1',
        port,
        address: `127.0.0.1:${port}`,
        jwksPort: port + 10,
        namespace: c.TEMPORAL_NAMESPACE,
      };
    })(),
  };
}

/**
 * What a process run beside the stack's own cluster (STACK_KAFKA=cluster, KAFKA_BROKERS unset) must be told to reach
 * it: every node as a bootstrap broker, so that it starts and reconnects while any one node is down. Empty otherwise.
 */
export function stackKafkaEnv(env: NodeJS.ProcessEnv = process.env): { KAFKA_BROKERS?: string } {
  if (kafkaKindFromEnv(env) !== 'cluster' || isSet(env, 'KAFKA_BROKERS')) return {};
  return { KAFKA_BROKERS: planFromEnv(env).kafka.brokers.join(',') };
}

/** The env variable that makes a service external (used, never started), for error messages when its port is taken. */
export const PORT_ENV: Partial<Record<ServiceName, string>> = {
  kafka: 'KAFKA_BROKERS',
  temporal: 'TEMPORAL_ADDRESS',
  postgres: 'DATABASE_URL',
  warehouse: 'WAREHOUSE_URL',
};

/** `postgres://user:***@host/db` for display. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}
