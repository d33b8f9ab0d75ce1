/**
 * The status relay's lag as a metric: every STATUS_RELAY_POLL_MS each worker that runs the relay (leading or standing
 * by) asks the store's status_outbox_lag(topic) (migration 007 — the age of the oldest unsent row by the database's
 * clock, 0 when none waits; a number, no row) and sets fulfilment_status_relay_lag_seconds{topic}. It keeps growing
 * while Kafka is down or no relay leads; a failed poll (PostgreSQL down) is logged and leaves the last value.
 */
import type { Logger } from '../../base/log.js';
import type { Metrics } from '../../base/metrics.js';
import type { Db } from '../store/db.js';
import { statusOutboxLag } from './outbox.js';

/** Polls every `ms` until the returned stop is called (the first poll at once). */
export function watchStatusRelayLag(
  db: Db,
  topic: string,
  metrics: Pick<Metrics, 'statusRelayLag'>,
  logger: Logger,
  ms: number,
): () => void {
  let failing = false;
  const poll = () =>
    statusOutboxLag(db, topic).then(
      (seconds) => {
        metrics.statusRelayLag.set({ topic }, seconds);
        if (failing) logger.info({ topic }, 'reading the status relay lag works again');
        failing = false;
      },
      (err: unknown) => {
        if (!failing)
          logger.warn(
            { topic, err: (err as Error).message },
            'could not read the status relay lag; the metric keeps its last value',
          );
        failing = true;
      },
    );
  void poll();
  const timer = setInterval(() => void poll(), ms);
  timer.unref();
  return () => clearInterval(timer);
}
