/**
 * The one abortable wait of the product: resolves after `ms`, or as soon as `signal` aborts — it never rejects, so a
 * loop that waits between rounds just checks its signal after it. Its timer and its listener on the signal are
 * cleaned up either way. Written over the global setTimeout rather than `node:timers/promises` so that the unit
 * tests' fake timers (vi.useFakeTimers), which do not reach the latter, drive it like every other timer.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
