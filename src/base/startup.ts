/**
 * Start-up during an outage: each role waits for what it needs — with jittered backoff, one log line per failed
 * attempt — instead of exiting. The bridge needs Kafka and Temporal, the worker Temporal and PostgreSQL; neither
 * waits for anything else (the bridge never touches PostgreSQL, the worker reaches Kafka only to dead-letter).
 */
import { ExponentialBackoff, handleWhen, retry } from 'cockatiel';
import type { Logger } from './log.js';
import { STARTUP_RETRY } from './retry-policies.js';

/** Thrown when start-up was given up (the process is stopping) while a dependency was still down. */
export class StartupAborted extends Error {
  override name = 'StartupAborted';
}

/**
 * A failure waiting cannot cure — a refused credential, an untrusted certificate, a missing client certificate, a
 * role the service must not run as. Start-up stops at once with this message and the process exits non-zero.
 */
export class PermanentStartupError extends Error {
  override name = 'PermanentStartupError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export interface WaitOptions {
  /**
   * Turns a failure that retrying cannot cure into a PermanentStartupError (return it), or returns undefined to
   * keep waiting. A PermanentStartupError thrown by `attempt` itself is never retried either.
   */
  permanent?: (err: unknown) => PermanentStartupError | undefined;
}

/**
 * Runs `attempt` until it succeeds, waiting between failures; every failure is logged with the dependency's name.
 * Rejects with StartupAborted once `signal` aborts, and with a PermanentStartupError, without waiting, on a
 * failure `opts.permanent` says no retry can cure.
 */
export async function waitForDependency<T>(
  dependency: string,
  attempt: () => Promise<T>,
  logger: Logger,
  signal?: AbortSignal,
  opts: WaitOptions = {},
): Promise<T> {
  const classify = (err: unknown) => (err instanceof PermanentStartupError ? err : opts.permanent?.(err));
  const policy = retry(
    handleWhen((err) => classify(err) === undefined),
    {
      backoff: new ExponentialBackoff({
        initialDelay: STARTUP_RETRY.initialDelayMs,
        maxDelay: STARTUP_RETRY.maxDelayMs,
      }),
    },
  );
  let failures = 0;
  policy.onRetry(({ delay, ...rest }) => {
    failures += 1;
    const err = 'error' in rest ? (rest.error as Error) : undefined;
    logger.warn(
      { dependency, attempt: failures, delayMs: Math.round(delay), err: err?.message },
      `waiting for ${dependency}`,
    );
  });
  try {
    const value = await policy.execute(async () => {
      try {
        return await attempt();
      } catch (err) {
        throw classify(err) ?? err;
      }
    }, signal);
    if (failures > 0) logger.info({ dependency, failedAttempts: failures }, `${dependency} is reachable`);
    return value;
  } catch (err) {
    if (signal?.aborted) throw new StartupAborted(`start-up stopped while waiting for ${dependency}`);
    throw err;
  }
}
