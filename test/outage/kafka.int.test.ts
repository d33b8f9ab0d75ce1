import { describe, expect, it } from 'vitest';
import { counter } from '../support/harness.js';
import { runOutage } from './outage.js';

describe('Kafka stopped and restarted mid-stream', () => {
  it('the bridge backs off with jitter, resumes by itself in the same process, and loses or repeats nothing', async () => {
    const result = await runOutage({
      service: 'kafka',
      // Fetches, heartbeats and commits fail: kafkajs retries its connections (counted), commits back off.
      felt: async ({ app }) =>
        (
          await Promise.all(
            ['kafka-connect', 'consume', 'commit'].map((operation) =>
              counter(app, 'fulfilment_failures_total', { operation }),
            ),
          )
        ).some((n) => n > 0),
    });
    expect(Object.values(result.retries).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });
});
