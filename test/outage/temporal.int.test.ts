import { describe, expect, it } from 'vitest';
import { counter } from '../support/harness.js';
import { runOutage } from './outage.js';

describe('Temporal stopped and restarted mid-stream', () => {
  it('deliveries fail as transient, the partitions pause and back off, and everything resumes by itself', async () => {
    const result = await runOutage({
      service: 'temporal',
      // signal-with-start answers UNAVAILABLE: a transient failure that closes the partition's backoff gate.
      felt: async ({ app }) => (await counter(app, 'fulfilment_retries_total', { operation: 'deliver' })) > 0,
    });
    expect(result.retries.deliver ?? 0).toBeGreaterThan(0);
    expect(result.failures.deliver ?? 0).toBeGreaterThan(0);
    // Never dead-lettered, never a commit past what Temporal accepted (checked by the scenario).
    expect(result.retries['dead-letter'] ?? 0).toBe(0);
  });
});
