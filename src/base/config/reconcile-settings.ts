/**
 * The worker's continuous reconciliation (src/roles/worker/continuous-reconcile.ts): how often a pass runs, how far
 * back it looks, and how long a state may settle before it is judged. Durations such as `30s`, `5m`, `1h`.
 *
 * Rule a reader must not break: the window less the settle time is at least the interval, so every record and order
 * falls in some pass's window (checked here, naming the three variables).
 */
import { durationMs, nonEmpty, type FieldsOf } from './fields.js';

/** A duration in seconds or more (`0` only where `zero` allows it). */
const seconds = (zero: string | undefined) =>
  nonEmpty.refine(
    (v) => {
      const ms = durationMs(v);
      return ms >= 1000 || (zero !== undefined && ms === 0);
    },
    `a duration of at least 1s such as 30s, 5m or 1h${zero ? `, or 0 (${zero})` : ''}`,
  );

export const reconcileSchema = {
  /**
   * How often this worker runs a reconciliation pass (the checks of `fulfilment reconcile`, read-only) over its sliding
   * window; the next pass starts this long after the previous one ended. `0`: this worker runs none. Default 5m.
   */
  RECONCILE_INTERVAL: seconds('no continuous reconciliation').default('5m'),
  /**
   * How far back a pass reads at the most. The first pass after start reads all of it; later ones what came since the
   * last clean pass (src/roles/worker/continuous-reconcile.ts). Default 1h.
   */
  RECONCILE_WINDOW: seconds(undefined).default('1h'),
  /**
   * How far behind now a pass's window ends, and how old a state must be before it is judged (a run opening, a
   * shipment or status event being recorded): `fulfilment reconcile --settle`'s default. `0` judges at once. Default 1m.
   */
  RECONCILE_SETTLE: seconds('judge at once').default('1m'),
};

type Config = FieldsOf<typeof reconcileSchema>;

/** The window less the settle time must cover the interval: a shorter one leaves records no pass judges. */
export function reconcileProblems(c: Partial<Config>): string[] {
  if (c.RECONCILE_INTERVAL === undefined || c.RECONCILE_WINDOW === undefined || c.RECONCILE_SETTLE === undefined)
    return [];
  const [interval, window, settle] = [c.RECONCILE_INTERVAL, c.RECONCILE_WINDOW, c.RECONCILE_SETTLE].map(durationMs);
  if (interval === 0 || window! - settle! >= interval!) return [];
  return [
    `RECONCILE_WINDOW=${c.RECONCILE_WINDOW} less RECONCILE_SETTLE=${c.RECONCILE_SETTLE} is shorter than RECONCILE_INTERVAL=${c.RECONCILE_INTERVAL}: ` +
      'records would fall between passes; expected a window at least the interval plus the settle time',
  ];
}
