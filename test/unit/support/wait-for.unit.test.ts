/** The tests' one wait (test/support/promises.ts): what it answers, and what its time-out says. */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../support/promises.js';

describe('waitFor', () => {
  it("answers the probe's first truthy value", async () => {
    let n = 0;
    expect(await waitFor('the third try', () => (++n >= 3 ? `try ${n}` : undefined), 5_000, 1)).toBe('try 3');
  });

  it('times out naming what it waited for, and the last error the probe threw even when later tries were falsy', async () => {
    let n = 0;
    const probe = () => {
      n += 1;
      if (n === 2) throw new Error('connection refused');
      return false;
    };
    await expect(waitFor('the server', probe, 200, 10)).rejects.toThrow(
      /^timed out after 200 ms waiting for the server: Error: connection refused$/,
    );
    expect(n).toBeGreaterThan(2);
  });

  it('says nothing more when the probe never threw', async () => {
    await expect(waitFor('nothing', () => 0, 50, 10)).rejects.toThrow(/^timed out after 50 ms waiting for nothing$/);
  });
});
