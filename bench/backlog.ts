/**
 * `npm run bench` — how much memory the bridge needs to drain a large backlog, and how fast it does.
 *
 *   1. produce a backlog onto a private topic: `--orders` orders × (`--events` / `--orders`) versions, each a
 *      placement with its own event id, in compact batches;
 *   2. start ONE bridge (roles bridge only, no worker: signals simply accumulate in the workflows' histories) as
 *      a child process, and follow its RSS (/proc/<pid>/status; VmHWM is the kernel's peak) and heap (the child
 *      reports process.memoryUsage() every 250 ms) until its group has committed every offset;
 *   3. print events/s, drain time, peak RSS and heap, and memory at milestones (10k, 25 %, 50 %, 75 %, done) so a
 *      flat profile is visible;
 *   4. clean up: the topics, the consumer group, and the workflows it started (terminated).
 *
 * Options: --events 100000  --orders 1000  --keep (leave topics, group and workflows for inspection).
 * Uses the stack addresses from the environment, like everything else (see README "Configuration").
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Partitioners } from 'kafkajs';
import { createKafka } from '../src/kafka/client.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { provision } from '../src/provision/index.js';
import { connectClient } from '../src/temporal.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    orders: { type: 'string', default: '1000' },
    keep: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(args.events);
const ORDERS = Number(args.orders);
const VERSIONS = Math.ceil(EVENTS / ORDERS);
if (!(EVENTS > 0 && ORDERS > 0)) throw new Error('--events and --orders must be positive numbers');

const suffix = `${Date.now().toString(36)}-${randomUUID().slice(0, 6)}`;
const tenant = `bench-${suffix}`;
const env: Record<string, string> = {
  ...(Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined))),
  ORDERS_TOPIC: `bench.backlog.${suffix}`,
  DLQ_TOPIC: `bench.dlq.${suffix}`,
  CONSUMER_GROUP: `bench-${suffix}`,
  TEMPORAL_TASK_QUEUE: `bench-${suffix}`,
  METRICS_PORT: '0',
  // The bench's worker runs on a task queue of its own: it must not point the shared retention schedule at it.
  LEDGER_PRUNE_INTERVAL: '0',
};
const config = loadConfig(env);
const logger = createLogger('warn');
const kafka = createKafka(config, logger, { clientId: `bench-${suffix}` });
const admin = kafka.admin();
const say = (line: string) => process.stdout.write(`${line}\n`);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function event(order: number, version: number) {
  const orderId = `o-${String(order).padStart(5, '0')}`;
  return {
    key: orderId,
    value: JSON.stringify({
      eventId: `${tenant}-${orderId}-v${version}`,
      type: 'orders.OrderPlaced',
      schemaVersion: 1,
      occurredAt: new Date().toISOString(),
      tenantId: tenant,
      orderId,
      orderVersion: version,
      correlationId: `bench-${orderId}`,
      data: { customerId: `c-${order}`, lines: [{ sku: `SKU-${order % 50}`, quantity: 1 + (version % 3) }] },
    }),
  };
}

async function produceBacklog(): Promise<number> {
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const t0 = Date.now();
  const batchSize = 5_000;
  let produced = 0;
  const inFlight = new Set<Promise<void>>();
  // Version-major order: every order's v1, then every order's v2... as a busy topic would carry them.
  for (let start = 0; start < EVENTS; start += batchSize) {
    const messages = [];
    for (let i = start; i < Math.min(EVENTS, start + batchSize); i += 1) messages.push(event(i % ORDERS, 1 + Math.floor(i / ORDERS)));
    const send = producer
      .send({ topic: config.ORDERS_TOPIC, acks: -1, messages })
      .then(() => {
        produced += messages.length;
      })
      .finally(() => inFlight.delete(send));
    inFlight.add(send);
    if (inFlight.size >= 4) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await producer.disconnect();
  say(`produced ${produced} events (${ORDERS} orders × ${VERSIONS} versions) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return produced;
}

async function caughtUp(): Promise<boolean> {
  const [ends, [committed]] = await Promise.all([
    admin.fetchTopicOffsets(config.ORDERS_TOPIC),
    admin.fetchOffsets({ groupId: config.CONSUMER_GROUP, topics: [config.ORDERS_TOPIC] }),
  ]);
  const done = new Map(committed?.partitions.map((p) => [p.partition, BigInt(p.offset)]) ?? []);
  return ends.every((e) => BigInt(e.high) === 0n || (done.get(e.partition) ?? -1n) >= BigInt(e.high));
}

/** kB values of VmRSS and VmHWM from /proc/<pid>/status, in bytes. */
function procMemory(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

interface Sample {
  t: number;
  handled: number;
  rss: number;
  heapUsed: number;
}

async function measureDrain(total: number) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/bridge-child.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const samples: Sample[] = [];
  let buffered = '';
  child.stdout.on('data', (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) if (line.startsWith('{')) samples.push(JSON.parse(line) as Sample);
  });
  const pid = child.pid!;
  let peakRss = 0;
  let hwm = 0;
  const rssTimer = setInterval(() => {
    const m = procMemory(pid);
    if (m) {
      peakRss = Math.max(peakRss, m.rss);
      hwm = Math.max(hwm, m.hwm);
    }
  }, 250);

  try {
    while (samples.length === 0) await new Promise((r) => setTimeout(r, 100));
    const started = samples[0]!;
    say(`bridge started (pid ${pid}, RSS ${mb(started.rss)}, heap ${mb(started.heapUsed)} before consuming)`);
    const milestones = [10_000, Math.round(total * 0.25), Math.round(total * 0.5), Math.round(total * 0.75)].filter((m, i, all) => m < total && all.indexOf(m) === i).sort((a, b) => a - b);
    const rows: string[] = [];
    let lastPrint = Date.now();
    for (;;) {
      if (await caughtUp().catch(() => false)) break;
      const last = samples[samples.length - 1]!;
      while (milestones.length > 0 && last.handled >= milestones[0]!) {
        const at = milestones.shift()!;
        const peakHeap = Math.max(...samples.map((s) => s.heapUsed));
        rows.push(`  ${String(at).padStart(7)}  ${mb(last.rss).padStart(9)}  ${mb(last.heapUsed).padStart(9)}  ${mb(Math.max(peakRss, hwm)).padStart(9)}  ${mb(peakHeap).padStart(9)}  ${((last.t - started.t) / 1000).toFixed(1).padStart(7)} s`);
      }
      if (Date.now() - lastPrint > 10_000) {
        lastPrint = Date.now();
        say(`  … ${last.handled} handled, ${(last.handled / ((last.t - started.t) / 1000)).toFixed(0)} events/s, RSS ${mb(last.rss)}, heap ${mb(last.heapUsed)}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const drainedAt = Date.now();
    const last = samples[samples.length - 1]!;
    const m = procMemory(pid);
    if (m) hwm = Math.max(hwm, m.hwm);
    const peakHeap = Math.max(...samples.map((s) => s.heapUsed));
    const drainSeconds = (drainedAt - started.t) / 1000;
    rows.push(`  ${String(total).padStart(7)}  ${mb(last.rss).padStart(9)}  ${mb(last.heapUsed).padStart(9)}  ${mb(Math.max(peakRss, hwm)).padStart(9)}  ${mb(peakHeap).padStart(9)}  ${drainSeconds.toFixed(1).padStart(7)} s`);
    say('');
    say('  handled        RSS       heap   peak RSS  peak heap  elapsed');
    for (const r of rows) say(r);
    say('');
    say(`drained ${total} events in ${drainSeconds.toFixed(1)} s: ${(total / drainSeconds).toFixed(0)} events/s`);
    say(`peak RSS ${mb(Math.max(peakRss, hwm))} (VmHWM), peak heap used ${mb(peakHeap)}, ${samples.length} samples at 250 ms`);
    return { drainSeconds, peakRss: Math.max(peakRss, hwm), peakHeap };
  } finally {
    clearInterval(rssTimer);
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

async function cleanUp(): Promise<void> {
  if (args.keep) {
    say(`kept topic ${config.ORDERS_TOPIC}, group ${config.CONSUMER_GROUP}, workflows of tenant ${tenant}`);
    return;
  }
  await admin.deleteTopics({ topics: [config.ORDERS_TOPIC, config.DLQ_TOPIC] }).catch((e: unknown) => say(`could not delete topics: ${String(e)}`));
  await admin.deleteGroups([config.CONSUMER_GROUP]).catch(() => undefined);
  // The workflows never ran (no worker on the private task queue): terminate them so nothing is left open.
  const client = await connectClient(config);
  let terminated = 0;
  const pending = new Set<Promise<void>>();
  for (let o = 0; o < ORDERS; o += 1) {
    const id = `order/${tenant}/o-${String(o).padStart(5, '0')}`;
    const p = client.workflow
      .getHandle(id)
      .terminate('bench clean-up')
      .then(() => {
        terminated += 1;
      })
      .catch(() => undefined)
      .finally(() => pending.delete(p));
    pending.add(p);
    if (pending.size >= 16) await Promise.race(pending);
  }
  await Promise.all(pending);
  await client.connection.close();
  say(`cleaned up: topics deleted, ${terminated} workflows terminated`);
}

await admin.connect();
try {
  // The bench's private topics (and the rest the service needs), as `fulfilment provision` creates them.
  await provision(config, logger);
  say(`bench ${suffix}: topic ${config.ORDERS_TOPIC} (${config.ORDERS_TOPIC_PARTITIONS} partitions), lanes ${config.BRIDGE_LANES}, max in flight ${config.BRIDGE_MAX_IN_FLIGHT}, ${config.BRIDGE_MAX_BYTES_PER_PARTITION} bytes per partition fetch`);
  const total = await produceBacklog();
  await measureDrain(total);
} finally {
  await cleanUp();
  await admin.disconnect();
}
