/**
 * kafkajs 2.2.4, its last release, arms its request queue's throttle check with a negative delay when nothing is
 * throttled (`throttledUntil` starts at -1; tulios/kafkajs#1751, unfixed upstream). Node has always run such a
 * timer after 1 ms; Node 24 also prints a `TimeoutNegativeWarning` to stderr for it (Node prints that warning at
 * most once per process), in every process that talks to Kafka. Importing this module drops that one warning — a TimeoutNegativeWarning raised from
 * kafkajs's request queue — and leaves every other warning to Node's own printing (and `--no-warnings`,
 * `--trace-warnings`) as before. Imported by every place that makes a kafkajs client.
 */
const KAFKAJS_REQUEST_QUEUE = /[\\/]kafkajs[\\/]src[\\/]network[\\/]requestQueue[\\/]/;

/** True for the warning kafkajs's request queue causes on Node 24, and only for it. */
export function isKafkajsNegativeTimeoutWarning(warning: Error): boolean {
  return warning.name === 'TimeoutNegativeWarning' && KAFKAJS_REQUEST_QUEUE.test(warning.stack ?? '');
}

const FILTERED = Symbol.for('fulfilment.kafkajs-negative-timeout-warning');

function install(): void {
  const proc = process as NodeJS.Process & { [FILTERED]?: true };
  if (proc[FILTERED]) return;
  proc[FILTERED] = true;
  // Node prints warnings through its own 'warning' listener; none is there under --no-warnings.
  const listeners = process.listeners('warning');
  if (listeners.length === 0) return;
  for (const l of listeners) process.removeListener('warning', l);
  process.on('warning', (warning) => {
    if (isKafkajsNegativeTimeoutWarning(warning)) return;
    for (const l of listeners) l(warning);
  });
}

install();
