/** The time-skipping test server from the stack's cache works with @temporalio/testing (nothing downloaded). */
import { describe, expect, it } from 'vitest';
import { temporalCliPath } from '../../tools/stack/index.js';
import { startTimeSkipping } from '../support/time-skipping.js';

describe('stack test tools', () => {
  it('runs the time-skipping test server from the wrapper and skips 30 days at once', async () => {
    const { env, teardown } = await startTimeSkipping();
    try {
      expect(env.supportsTimeSkipping).toBe(true);
      const before = await env.currentTimeMs();
      await env.sleep('30 days');
      expect((await env.currentTimeMs()) - before).toBeGreaterThanOrEqual(30 * 24 * 3600 * 1000);
    } finally {
      await teardown();
    }
  });

  it('has a temporal CLI for createLocal', async () => {
    expect(await temporalCliPath()).toMatch(/temporal$/);
  });
});
