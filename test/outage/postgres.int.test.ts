import { describe, expect, it } from 'vitest';
import { maxPendingActivityAttempt, runOutage } from './outage.js';

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
  it('activities fail and Temporal retries them with backoff; the bridge is untouched; every order ships once', async () => {
    let maxAttempt = 0;
    const result = await runOutage({
      service: 'postgres',
      felt: async ({ app, tenant, producedOrders }) => {
        maxAttempt = Math.max(maxAttempt, await maxPendingActivityAttempt(app, tenant, producedOrders().slice(-10)));
        return maxAttempt >= 2;
      },
    });
    process.stdout.write(`[outage:postgres] highest activity attempt seen while down: ${maxAttempt}\n`);
    // The bridge never talks to PostgreSQL: nothing for it to retry.
    expect(result.retries.deliver ?? 0).toBe(0);
    // Temporal's retries follow the activity policy: no more attempts than it allows in the time observed.
    expect(maxAttempt).toBeLessThanOrEqual(storeAttemptsWithin(result.stopMs + result.downMs + result.startMs + result.recoveryToShippedMs));
  });
});
