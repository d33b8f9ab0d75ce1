import { describe, expect, it } from 'vitest';
import { stackTemporalKind } from '../../tools/stack/index.js';
import { counter } from '../support/harness.js';
import { maxPendingActivityAttempt, runOutage } from './outage.js';

/**
 * With STACK_TEMPORAL=server the Temporal server keeps its store on this PostgreSQL: stopping it stops Temporal's
 * persistence too, so the bridge's hand-overs fail and are retried (within the backoff bound runOutage checks), and
 * a workflow cannot be described while it is down.
 */
const temporalOnPostgres = stackTemporalKind() === 'server';

/** The store activities' retry policy (workflows/order-fulfilment.ts): 500 ms doubling to 30 s, no jitter. */
function storeAttemptsWithin(windowMs: number): number {
  let attempts = 1;
  for (let elapsed = 0, k = 0; ; k += 1) {
    elapsed += Math.min(30_000, 500 * 2 ** k);
    if (elapsed > windowMs) return attempts;
    attempts += 1;
  }
}

describe('PostgreSQL stopped and restarted mid-stream', () => {
  const title = temporalOnPostgres
    ? 'Temporal on the same PostgreSQL: activities and hand-overs fail and are retried with backoff; every order ships once'
    : 'activities fail and Temporal retries them with backoff; the bridge is untouched; every order ships once';
  it(title, async () => {
    let maxAttempt = 0;
    const result = await runOutage({
      service: 'postgres',
      felt: async ({ app, tenant, producedOrders }) => {
        maxAttempt = Math.max(maxAttempt, await maxPendingActivityAttempt(app, tenant, producedOrders().slice(-10)));
        if (temporalOnPostgres)
          return maxAttempt >= 2 || (await counter(app, 'fulfilment_retries_total', { operation: 'deliver' })) > 0;
        return maxAttempt >= 2;
      },
    });
    process.stdout.write(`[outage:postgres] highest activity attempt seen while down: ${maxAttempt}\n`);
    // The bridge never talks to PostgreSQL: nothing for it to retry — unless Temporal's own store is on it.
    if (!temporalOnPostgres) expect(result.retries.deliver ?? 0).toBe(0);
    // Temporal's retries follow the activity policy: no more attempts than it allows in the time observed.
    expect(maxAttempt).toBeLessThanOrEqual(
      storeAttemptsWithin(result.stopMs + result.downMs + result.startMs + result.recoveryToShippedMs),
    );
  });
});
