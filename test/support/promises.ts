/** Promise helpers for tests: observe a promise without awaiting it, wait for a condition (never a fixed sleep). */
import { vi } from 'vitest';

/** Observes a promise without awaiting it (and without leaving a rejection unhandled). */
export function track<T>(promise: Promise<T>) {
  const s: { state: 'pending' | 'fulfilled' | 'rejected'; value?: T; error?: unknown } = { state: 'pending' };
  promise.then(
    (value) => Object.assign(s, { state: 'fulfilled', value }),
    (error: unknown) => Object.assign(s, { state: 'rejected', error }),
  );
  return s;
}

/**
 * Polls `probe` (vitest's vi.waitFor) until it returns a truthy value; a probe that throws is polled again, and its
 * last error is part of the message when `timeoutMs` passes, which names `what` was waited for. Outside vitest (a tool
 * such as test/support/record-histories.ts, run with tsx) the same polling runs on the plain timers.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T> | T,
  timeoutMs = 60_000,
  intervalMs = 100,
): Promise<NonNullable<T>> {
  // The last error the probe threw, kept when later attempts merely answered falsy.
  let thrown: unknown;
  try {
    return await (process.env.VITEST ? vi.waitFor : pollOutsideVitest)(
      async () => {
        let v: T;
        try {
          v = await probe();
        } catch (err) {
          thrown = err;
          throw err;
        }
        if (!v) throw new NotYet();
        return v as NonNullable<T>;
      },
      { timeout: timeoutMs, interval: intervalMs },
    );
  } catch (err) {
    const last = err instanceof NotYet ? thrown : err;
    const why = last === undefined ? '' : `: ${String(last)}`;
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`, { cause: err });
  }
}

/** A probe's answer that was not truthy yet. */
class NotYet extends Error {}

/** vi.waitFor's contract without vitest: `attempt` again every `interval` ms until it resolves or `timeout` passes. */
async function pollOutsideVitest<V>(
  attempt: () => Promise<V>,
  { timeout, interval }: { timeout: number; interval: number },
): Promise<V> {
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() + interval > deadline) throw err;
      await new Promise((r) => setTimeout(r, interval));
    }
  }
}
