/**
 * kafkajs 2.2.4, its last release, keeps a timer firing every millisecond on every broker connection it has sent a
 * request on, for as long as the connection lives: its request queue re-arms its throttle check after every check,
 * whether or not a request waits, and with a negative delay when nothing is throttled (`throttledUntil` starts at
 * -1), which Node runs after 1 ms (tulios/kafkajs#1556 and #1704; the fix, #1667, was never merged). Node 24 also
 * prints a `TimeoutNegativeWarning` for it (#1751). In this service that loop was about a third of the idle process's
 * CPU (3.1–3.2 → 2.0–2.5 % of a core) and a few tenths of a millisecond of every order's (docs/performance.md).
 *
 * Importing this module replaces that one method of kafkajs's request queue with the rule it was meant to follow: a
 * check is armed only while a request waits — for the end of the throttle, or kafkajs's own 10 ms when the queue is
 * merely full — and a queue with nothing pending arms none (a request that has to wait arms it in push(); a finished
 * one checks the queue at once). Only on kafkajs 2.2.4, whose code this rule was read from: another version is left
 * as it is, and the unit test says so. Imported by every place that makes a kafkajs client.
 */
import { createRequire } from 'node:module';

/** The kafkajs release whose request queue this module fixes. */
export const KAFKAJS_RELEASE_FIXED = '2.2.4';
/** kafkajs's own interval between checks of a queue full of requests in flight (CHECK_PENDING_REQUESTS_INTERVAL). */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

/** The part of kafkajs's RequestQueue the rule reads and arms. */
interface RequestQueueState {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
}

/** Arms one check of the pending requests, only while one waits. */
export function scheduleCheckPendingRequests(this: RequestQueueState): void {
  if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
  const untilUnthrottled = this.throttledUntil - Date.now();
  this.throttleCheckTimeoutId = setTimeout(
    () => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    },
    untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS,
  );
}

function install(): boolean {
  const require = createRequire(import.meta.url);
  const { version } = require('kafkajs/package.json') as { version: string };
  if (version !== KAFKAJS_RELEASE_FIXED) return false;
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
    prototype: { scheduleCheckPendingRequests: () => void };
  };
  RequestQueue.prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  return true;
}

/** True when kafkajs's request queue runs the rule above (it is the release this module fixes). */
export const requestQueueFixed = install();
