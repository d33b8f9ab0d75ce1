/**
 * What the reconciler's tests share: a check's mismatches as `<kind> <order>` lines, easy to compare; a scenario
 * with its tenant and window, with `fulfilment reconcile` run over them; and a stretch of records skipped in life.
 */
import type { App } from '../../src/app.js';
import type { CheckResult } from '../../src/reconcile/mismatch.js';
import { endOffsets, events, scenario, waitFor, type Scenario } from './harness.js';
import { cliOf, type CliRun } from './operator.js';

export function kinds(result: Pick<CheckResult, 'mismatches'>): string[] {
  return result.mismatches.map((m) => `${m.kind} ${m.orderId}`);
}

/** A scenario for one reconcile test file: its tenant, the window's start, and `fulfilment reconcile` over them. */
export interface ReconcileCase {
  s: Scenario;
  tenant: string;
  since: string;
  /** `fulfilment reconcile --since <since> --tenant <tenant> --settle 0s <more…>`: every state judged at once. */
  reconcile(...more: string[]): Promise<CliRun>;
}

export async function reconcileCase(name: string): Promise<ReconcileCase> {
  const s = await scenario(name);
  const since = new Date(Date.now() - 1000).toISOString();
  const tenant = s.tenant();
  return {
    s,
    tenant,
    since,
    reconcile: (...more) => cliOf(s)('reconcile', '--since', since, '--tenant', tenant, '--settle', '0s', ...more),
  };
}

/**
 * Records skipped the way it happens in life: with `bridge` stopped, one placement per order is published (order i on
 * partition i) and the consumer group's offsets are set past them with Kafka's admin API (an operator skipping a bad
 * stretch: the group empty); then a bridge starts again, which nothing else notices. Returns the new bridge.
 * `beforeTheMove` runs between the publishing and the move.
 */
export async function skipStretch(
  c: ReconcileCase,
  bridge: App,
  orders: readonly string[],
  beforeTheMove: () => Promise<void> = async () => undefined,
): Promise<App> {
  await bridge.stop();
  await c.s.produce(orders.map((order, i) => ({ partition: i, value: events.placed(c.tenant, order) })));
  await beforeTheMove();
  const ends = await endOffsets(c.s.admin, c.s.config.ORDERS_TOPIC);
  await c.s.admin.setOffsets({
    groupId: c.s.config.CONSUMER_GROUP,
    topic: c.s.config.ORDERS_TOPIC,
    partitions: [...ends].map(([partition, offset]) => ({ partition, offset: offset.toString() })),
  });
  return c.s.startInstance({ roles: { worker: false, bridge: true } });
}

/**
 * The end of a run that must leave nothing behind: `fulfilment reconcile` over `tenants` since `since`, every check,
 * until a pass agrees everywhere (exit 0) — a pass read while the last runs close or the last status events go out may
 * still see them in flight. Times out naming the last pass's report.
 */
export async function reconcilesClean(
  s: Pick<Scenario, 'config'>,
  opts: { tenants: readonly string[]; since: Date; timeoutMs?: number },
): Promise<void> {
  const reconcile = cliOf(s);
  await waitFor(
    'a reconcile pass over the run to find every order agreeing everywhere',
    async () => {
      const run = await reconcile(
        'reconcile',
        '--since',
        opts.since.toISOString(),
        ...opts.tenants.flatMap((t) => ['--tenant', t]),
        '--settle',
        '0s',
      );
      if (run.code !== 0) throw new Error(`reconcile exited ${run.code}:\n${run.stdout}${run.stderr}`);
      return true;
    },
    opts.timeoutMs ?? 60_000,
    2_000,
  );
}
