/**
 * The local stack: Temporal dev server, Kafka (KRaft), PostgreSQL and the warehouse service as detached daemons
 * tracked by pid files in the state dir (<repo>/.stack or STACK_DIR), plus the tools tests need (temporal CLI,
 * time-skipping test server). A service whose address variable is set in the environment is external: used, never
 * started or stopped.
 *
 *   const info = await stackUp();          // idempotent; starts what is not running; returns addresses
 *   await stackStatus();                   // same shape, starts nothing
 *   await stackDown();                     // stops only what this stack started
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ON_DEMAND, planFromEnv, SERVICE_NAMES, type ServiceName, type StackPlan } from './addresses.js';
import { isQuiet, say, setQuiet, StackError, warn, fmtSeconds } from './log.js';
import { logsDir, stateDir } from './paths.js';
import { portAnswers, runningDaemon, stopDaemon, withLock } from './proc.js';
import { ensureUp, portOwner, type Service, type ServiceInfo } from './service.js';
import { kafkaSaslSsl, kafkaService, type KafkaSaslSslInfo } from './services/kafka.js';
import { clusterNodes, kafkaNode, type KafkaNodeInfo, type NodeAction } from './services/kafka-cluster.js';
import { postgresService } from './services/postgres.js';
import { temporalService } from './services/temporal.js';
import { dropServerStore, temporalDescription, temporalKindOf } from './services/temporal-server.js';
import { DEV_STORE_FILES, devDir } from './services/temporal-dev.js';
import { temporalTlsInfo, temporalTlsService, type TemporalTlsInfo } from './services/temporal-tls.js';
import { warehouseService } from './services/warehouse.js';
import { temporalCliPath } from './temporal-cli.js';
import { testServerExecutablePath } from './tools.js';

// The stack's one entry for everything outside it (tests, the bench, the other tools); test/stack/ tests its parts.
export { kubeconformPath, kustomizePath, temporalServerPath, testServerExecutablePath } from './tools.js';
export { TEMPORAL_CLI, temporalCliPath } from './temporal-cli.js';
export { ensureNamespace, registerSearchAttributes } from './services/temporal.js';
export { privateServerCommand } from './services/temporal-dev.js';
export { repoRoot } from './paths.js';
export { clusterHome, findPgBinDir, superuserClient } from './services/postgres.js';
export { decodeJwt } from './jwt.js';
export { makeCa } from './tls.js';
export { planFromEnv, SERVICE_NAMES, stackKafkaEnv, type ServiceName, type StackPlan } from './addresses.js';
export type { ServiceInfo, ServiceState } from './service.js';
export type { KafkaSaslSslInfo } from './services/kafka.js';
export type { TemporalTlsInfo } from './services/temporal-tls.js';
export { mintApiKey, stackSigningKey } from './temporal-tls-credentials.js';
export { newSigningKey } from './jwt.js';
export { StackError } from './log.js';
// Building blocks the deployment validators (tools/deploy/) share with the stack: progress lines, the cache outside
// the repository, a lock per checkout, Go-built tools.
export { fmtSeconds, say } from './log.js';
export { cacheDir } from './paths.js';
export { cachedFolder, groupMembers, runQuick, withLock } from './proc.js';
export { goInstalledTool, goModuleDir } from './tools.js';

export interface StackInfo {
  kafkaBrokers: string[];
  /** Which Kafka the stack runs (STACK_KAFKA): one broker, or the three-node cluster. */
  kafkaKind: 'broker' | 'cluster';
  /** The cluster's nodes, with what each leads (STACK_KAFKA=cluster, run by this stack). */
  kafkaNodes?: KafkaNodeInfo[];
  /** The SASL_SSL listener of the stack's Kafka (SCRAM, the stack's CA); absent when Kafka is external. */
  kafkaSaslSsl?: KafkaSaslSslInfo;
  temporalAddress: string;
  temporalNamespace: string;
  /** The TLS Temporal (mTLS and API keys, on demand: `up --only temporal-tls`); services['temporal-tls'] says whether it runs. */
  temporalTls: TemporalTlsInfo;
  temporalUiUrl: string;
  /** Which Temporal the stack runs (STACK_TEMPORAL), in words. */
  temporalRuns: string;
  temporalKind: 'dev' | 'server';
  databaseUrl: string;
  warehouseUrl: string;
  stateDir: string;
  services: Record<ServiceName, ServiceInfo>;
}

export interface StackUpOptions {
  /** Only these services (default: all but the on-demand ones, ON_DEMAND). */
  services?: ServiceName[];
  /** No progress lines on stderr. */
  quiet?: boolean;
  /**
   * Also make sure the time-skipping test server and the Temporal CLI exist (what every test needs; the Go-built tools
   * some tests need are built beside the suite: tools/test-builds.ts).
   */
  forTests?: boolean;
}

const SERVICES: Record<ServiceName, Service> = {
  postgres: postgresService,
  kafka: kafkaService,
  temporal: temporalService,
  warehouse: warehouseService,
  'temporal-tls': temporalTlsService,
};

const lockDir = () => join(stateDir(), '.lock');

/** Starts what is not running (idempotent) and returns the addresses. */
export async function stackUp(opts: StackUpOptions = {}): Promise<StackInfo> {
  const prevQuiet = isQuiet();
  if (opts.quiet !== undefined) setQuiet(opts.quiet);
  try {
    const plan = planFromEnv();
    const wanted = opts.services?.length ? opts.services : SERVICE_NAMES.filter((s) => !ON_DEMAND.includes(s));
    for (const s of wanted)
      if (!SERVICE_NAMES.includes(s)) throw new StackError(`unknown service ${s} (known: ${SERVICE_NAMES.join(', ')})`);
    const notes: Partial<Record<ServiceName, string>> = {};
    const t0 = Date.now();
    await withLock(lockDir(), 'another `stack up`/`down` in this checkout', async () => {
      // First-run builds/fetches are done one after another (2 cores), before any service starts.
      if (opts.forTests) {
        await testServerExecutablePath();
        await temporalCliPath();
      }
      const local = wanted.filter((s) => !SERVICES[s].external(plan));
      const startable = local.filter((s) => {
        const why = SERVICES[s].unavailable?.(plan);
        if (why) {
          notes[s] = why;
          say(`${s}: ${why}`);
        }
        return !why;
      });
      // The Temporal server keeps its store on the stack's PostgreSQL: it starts once PostgreSQL is up.
      const started = new Map<ServiceName, Promise<void>>();
      const after = (s: ServiceName): ServiceName[] =>
        s === 'temporal' && plan.temporal.kind === 'server' && startable.includes('postgres') ? ['postgres'] : [];
      for (const s of startable) {
        const deps = after(s).map((d) => started.get(d)?.catch(() => undefined));
        started.set(
          s,
          (async () => {
            await Promise.all(deps);
            const r = await ensureUp(SERVICES[s], plan);
            if (r.note) notes[s] = r.note;
            if (r.info === 'already-running') say(`${s}: already running (pid ${r.pid})`);
          })(),
        );
      }
      const results = await Promise.allSettled(startable.map((s) => started.get(s)));
      // External services: check they answer, and give them what the app needs (topics, search attributes...).
      await Promise.all(
        wanted
          .filter((s) => SERVICES[s].external(plan))
          .map(async (s) => {
            const svc = SERVICES[s];
            if (!(await svc.ready(plan, true))) {
              notes[s] = `external ${svc.address(plan)} is not answering`;
              warn(`${s}: ${notes[s]}`);
              return;
            }
            say(`${s}: using external ${svc.address(plan)}`);
            try {
              await svc.afterReady?.(plan, true);
            } catch (e) {
              notes[s] = e instanceof Error ? e.message : String(e);
              warn(`${s}: ${notes[s]}`);
            }
          }),
      );
      const failed = results
        .map((r, i) =>
          r.status === 'rejected'
            ? `${startable[i]}: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`
            : undefined,
        )
        .filter((x): x is string => x !== undefined);
      if (failed.length) throw new StackError(`stack up failed:\n${failed.join('\n')}`);
    });
    say(`stack is up (${fmtSeconds(Date.now() - t0)})`);
    return await collectStatus(plan, notes);
  } finally {
    setQuiet(prevQuiet);
  }
}

/** Stops what this stack started (pid files; all services or `services`); external and foreign processes are left alone. */
export async function stackDown(opts: { services?: ServiceName[]; quiet?: boolean } = {}): Promise<void> {
  const prevQuiet = isQuiet();
  if (opts.quiet !== undefined) setQuiet(opts.quiet);
  try {
    await withLock(lockDir(), 'another `stack up`/`down` in this checkout', async () => {
      const which = opts.services?.length ? opts.services : [...SERVICE_NAMES];
      // A Temporal server stops before the PostgreSQL that holds its store (the dev server has nothing to wait for).
      const server = which.includes('temporal') && !!runningDaemon('temporal')?.command.includes('temporal-server');
      const temporalStopped = server ? stopOne('temporal') : Promise.resolve();
      await Promise.all(
        which.map(async (s) => {
          if (s === 'temporal' && server) return temporalStopped;
          if (s === 'postgres') await temporalStopped;
          return stopOne(s);
        }),
      );
    });
  } finally {
    setQuiet(prevQuiet);
  }
}

async function stopOne(s: ServiceName): Promise<void> {
  const svc = SERVICES[s];
  const rec = runningDaemon(s);
  if (!rec) return;
  say(`${s}: stopping pid ${rec.pid}`);
  const t0 = Date.now();
  await stopDaemon(s, svc.stopSignal, svc.stopGraceMs);
  svc.afterStop?.(planFromEnv());
  say(`${s}: stopped (${fmtSeconds(Date.now() - t0)})`);
}

/**
 * Stops the stack's Temporal and empties its store — the dev server's SQLite file, or the Temporal server's two
 * databases on the stack's PostgreSQL — so the next `up` starts it on an empty one (the bench's `--fresh-temporal`: a
 * store that grew with earlier runs is slower, and figures taken on different sizes do not compare). Every workflow in
 * it is lost; an external Temporal is never touched.
 */
export async function stackResetTemporal(): Promise<void> {
  const plan = planFromEnv();
  if (plan.temporal.external)
    throw new StackError('temporal: TEMPORAL_ADDRESS points at an external Temporal, which the stack never resets');
  await stackDown({ services: ['temporal'] });
  await withLock(lockDir(), 'another `stack up`/`down` in this checkout', async () => {
    if (plan.temporal.kind === 'server') await dropServerStore(plan);
    else for (const f of DEV_STORE_FILES) rmSync(join(devDir(), f), { force: true });
    say(`temporal: store emptied (${plan.temporal.kind === 'server' ? 'databases dropped' : 'SQLite file removed'})`);
  });
}

/** Addresses and state of every service; starts nothing. */
export async function stackStatus(): Promise<StackInfo> {
  return collectStatus(planFromEnv(), {});
}

async function collectStatus(plan: StackPlan, notes: Partial<Record<ServiceName, string>>): Promise<StackInfo> {
  const entries = await Promise.all(
    SERVICE_NAMES.map(async (s): Promise<[ServiceName, ServiceInfo]> => {
      const svc = SERVICES[s];
      const address = svc.address(plan);
      const mainPort = svc.ports(plan)[0];
      const answering = mainPort ? await portAnswers(mainPort.host, mainPort.port, 800) : undefined;
      const info: ServiceInfo = { state: 'stopped', address };
      if (answering !== undefined) info.answering = answering;
      if (svc.external(plan)) info.state = 'external';
      else {
        const rec = runningDaemon(s);
        if (rec) {
          info.state = 'running';
          info.pid = rec.pid;
          info.log = rec.log;
        } else if (answering && mainPort) {
          const owner = await portOwner(mainPort);
          if (owner.kind === 'stack' && svc.shareable === false) {
            info.note = `port ${mainPort.port} is used by the stack in ${owner.dir}, whose certificates and keys are not this checkout's`;
          } else if (owner.kind === 'stack') {
            info.state = 'external';
            info.note = `run by the stack in ${owner.dir}`;
          } else if (owner.kind === 'leftover') {
            info.note = `port ${mainPort.port} is held by pid ${owner.pid}, left by an earlier run of this stack: \`up\` replaces it`;
          } else if (owner.kind === 'foreign') {
            info.note = `port ${mainPort.port} is used by ${owner.pid ? `pid ${owner.pid}` : 'a process'} not started by this stack`;
          }
        } else {
          const why = svc.unavailable?.(plan);
          if (why) info.note = why;
        }
      }
      const note = notes[s];
      if (note && !info.note) info.note = note;
      return [s, info];
    }),
  );
  const temporalRec = plan.temporal.external ? undefined : runningDaemon('temporal');
  return {
    kafkaBrokers: plan.kafka.brokers,
    kafkaKind: plan.kafka.kind,
    ...(plan.kafka.external || plan.kafka.kind === 'cluster' ? {} : { kafkaSaslSsl: kafkaSaslSsl(plan) }),
    ...(plan.kafka.kind === 'cluster' && !plan.kafka.external ? { kafkaNodes: await clusterNodes(plan) } : {}),
    temporalAddress: plan.temporal.address,
    temporalNamespace: plan.temporal.namespace,
    temporalTls: temporalTlsInfo(plan),
    temporalUiUrl: plan.temporal.uiUrl,
    temporalRuns: temporalDescription(plan, temporalRec),
    temporalKind: temporalKindOf(plan, temporalRec),
    databaseUrl: plan.postgres.url,
    warehouseUrl: plan.warehouse.url,
    stateDir: stateDir(),
    services: Object.fromEntries(entries) as Record<ServiceName, ServiceInfo>,
  };
}

export const stackLogsDir = logsDir;

/** `stack kafka-node stop|kill|start <n>`: faults or restores one node of the stack's Kafka cluster. */
export async function stackKafkaNode(action: NodeAction, id: number): Promise<void> {
  const plan = planFromEnv();
  if (plan.kafka.kind !== 'cluster' || plan.kafka.external)
    throw new StackError('kafka-node: the stack runs no Kafka cluster here (STACK_KAFKA=cluster starts one)');
  if (!runningDaemon('kafka'))
    throw new StackError("kafka-node: the stack's Kafka cluster is not running (`up` starts it)");
  await kafkaNode(plan, action, id);
}
export {
  CLUSTER_REPLICATION,
  clusterNodes,
  nodePid,
  partitionPlacement,
  liveBrokerIds,
  type KafkaNodeInfo,
  type NodeAction,
  type PartitionPlacement,
} from './services/kafka-cluster.js';

/**
 * Which Temporal this stack runs: what the running daemon is, else what `up` would start (STACK_TEMPORAL). With
 * 'server' the Temporal server keeps its store on the stack's PostgreSQL, so stopping PostgreSQL stops Temporal too.
 */
export function stackTemporalKind(): 'dev' | 'server' {
  const plan = planFromEnv();
  return temporalKindOf(plan, plan.temporal.external ? undefined : runningDaemon('temporal'));
}
