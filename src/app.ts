/**
 * Composes the running service from the configuration: the Temporal worker hosting the order workflow and
 * its activities, and the Kafka bridge feeding it. `npm start`, the demo and the integration tests all start
 * the service through here, so what is tested is what runs.
 */
import type { Server } from 'node:http';
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { NativeConnection, Worker as TemporalWorker } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import type { OrderWorkflowSettings } from '../workflows/api.js';
import { createBridge, type Bridge, type TransientRetry } from './bridge/bridge.js';
import { createKafka } from './bridge/kafka.js';
import { createOrderStarter, type OrderStarter } from './bridge/order-starter.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { createMetrics, serveMetrics, type Metrics } from './metrics.js';
import { createDb, type Db } from './store/db.js';
import { connectClient, workflowBundle } from './temporal.js';
import { createWarehouseClient } from './warehouse/client.js';

export interface AppOptions {
  logger: Logger;
  /** Run the worker, the bridge, or both (default: config.FULFILMENT_ROLES). */
  roles?: { worker?: boolean; bridge?: boolean };
  /** Serve /metrics on config.METRICS_PORT (default true when METRICS_PORT > 0). */
  serveMetrics?: boolean;
  bridgeRetry?: Partial<TransientRetry>;
  /** Decorates the bridge's order starter (tests use it to crash between delivery and commit). */
  wrapStarter?: (starter: OrderStarter) => OrderStarter;
}

export interface App {
  config: Config;
  metrics: Metrics;
  db: Db;
  client: Client;
  worker?: Worker;
  bridge?: Bridge;
  stop(): Promise<void>;
}

export function workflowSettings(config: Config): OrderWorkflowSettings {
  return { cancelGraceSeconds: config.CANCEL_GRACE_SECONDS, lingerSeconds: config.ORDER_LINGER_SECONDS };
}

export async function startApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger } = opts;
  const runWorker = opts.roles?.worker ?? config.FULFILMENT_ROLES.includes('worker');
  const runBridge = opts.roles?.bridge ?? config.FULFILMENT_ROLES.includes('bridge');
  const metrics = createMetrics({ defaultMetrics: opts.serveMetrics ?? false });
  const db = createDb(config.DATABASE_URL);
  const client = await connectClient(config.TEMPORAL_ADDRESS, config.TEMPORAL_NAMESPACE);
  const stops: (() => Promise<unknown>)[] = [];

  let worker: Worker | undefined;
  let workerRun: Promise<void> | undefined;
  if (runWorker) {
    const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
    worker = await TemporalWorker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowBundle: await workflowBundle(),
      activities: createActivities({ db, warehouse: createWarehouseClient(config.WAREHOUSE_URL), logger: logger.child({ component: 'activities' }), metrics }),
      shutdownGraceTime: 10_000,
      // Cancellation reaches a running activity only through its heartbeat: keep that prompt.
      maxHeartbeatThrottleInterval: '2 seconds',
    });
    workerRun = worker.run();
    const w = worker;
    stops.push(async () => {
      if (w.getState() === 'RUNNING') w.shutdown();
      await workerRun?.catch((err: unknown) => logger.error({ err }, 'worker stopped with an error'));
      await connection.close();
    });
  }

  let bridge: Bridge | undefined;
  if (runBridge) {
    const kafka = createKafka(config.KAFKA_BROKERS, config.KAFKA_CLIENT_ID, logger);
    bridge = createBridge({
      kafka,
      topic: config.ORDERS_TOPIC,
      dlqTopic: config.DLQ_TOPIC,
      groupId: config.CONSUMER_GROUP,
      starter: (opts.wrapStarter ?? ((x) => x))(createOrderStarter(client, config.TEMPORAL_TASK_QUEUE, workflowSettings(config))),
      logger,
      metrics,
      lanes: config.BRIDGE_LANES,
      sessionTimeoutMs: config.BRIDGE_SESSION_TIMEOUT_MS,
      retry: opts.bridgeRetry,
    });
    await bridge.start();
    const b = bridge;
    // The bridge stops first: nothing new is handed to workflows while the worker drains.
    stops.unshift(() => b.stop());
  }

  let server: Server | undefined;
  if ((opts.serveMetrics ?? true) && config.METRICS_PORT > 0) {
    server = await serveMetrics(metrics.registry, config.METRICS_PORT, config.METRICS_HOST);
    stops.push(() => new Promise((resolve) => server!.close(resolve)));
  }
  stops.push(() => client.connection.close(), () => db.end());

  let stopped: Promise<void> | undefined;
  return {
    config,
    metrics,
    db,
    client,
    worker,
    bridge,
    stop() {
      stopped ??= (async () => {
        for (const stop of stops) await stop().catch((err: unknown) => logger.warn({ err }, 'error while stopping'));
      })();
      return stopped;
    },
  };
}
