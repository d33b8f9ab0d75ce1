import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/base/log.js';
import { PermanentStartupError, waitForDependency } from '../../../src/base/startup.js';

const logger = createLogger('silent');

describe('waitForDependency', () => {
  it('keeps trying a failure that waiting can cure', async () => {
    let calls = 0;
    const value = await waitForDependency(
      'flaky',
      async () => {
        calls += 1;
        if (calls < 3) throw new Error('ECONNREFUSED');
        return 'up';
      },
      logger,
    );
    expect(value).toBe('up');
    expect(calls).toBe(3);
  });

  it('gives up at once on a failure the classifier calls permanent, with its message', async () => {
    let calls = 0;
    const attempt = waitForDependency(
      'Kafka',
      async () => {
        calls += 1;
        throw new Error('SASL authentication failed');
      },
      logger,
      undefined,
      {
        permanent: (err) =>
          /SASL/.test((err as Error).message)
            ? new PermanentStartupError(`Kafka refused the credentials: ${(err as Error).message}`)
            : undefined,
      },
    );
    await expect(attempt).rejects.toThrow(/^Kafka refused the credentials: SASL authentication failed$/);
    expect(calls).toBe(1);
  });

  it('never retries a PermanentStartupError thrown by the attempt itself', async () => {
    let calls = 0;
    await expect(
      waitForDependency(
        'PostgreSQL',
        async () => {
          calls += 1;
          throw new PermanentStartupError('runs as a superuser');
        },
        logger,
      ),
    ).rejects.toBeInstanceOf(PermanentStartupError);
    expect(calls).toBe(1);
  });
});
