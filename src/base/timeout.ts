/** A bound on how long to wait for a promise: the one timeout helper of the service and the CLI. */

/**
 * `work`, or a rejection with `message` once `ms` passed without it settling. The timer never keeps the process alive
 * and is cleared as soon as either side settles; `work` itself is not stopped (give it a signal for that).
 */
export function withTimeout<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
