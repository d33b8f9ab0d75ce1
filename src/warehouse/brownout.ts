/**
 * The brownout rule: whether this process's recent calls say the warehouse fails for everyone, so that a dependency
 * failure met now is an outage (the order waits) and not the order's own (an attempt spent).
 *
 * The rule judges the calls that reached the warehouse (or tried to: the circuit's fast refusals are not calls) over
 * the last `windowMs` — or, when those are fewer than `minCalls` (low traffic: a few orders a minute), over the last
 * `minCalls` calls however old, so that it judges at any traffic level. The warehouse fails for everyone when at least
 * `failurePercent` % of the judged calls failed (5xx, timeout, unreachable) and the failures were of at least
 * `minFailingKeys` different shipments. The last figure keeps one order whose requests the warehouse fails again and
 * again (its own fault) from ever being judged "the warehouse": it spends its attempts and fails, as any order failing
 * alone does. Before this process has made `minCalls` calls there is nothing to judge on (`judged` false): the client
 * then makes a failing order wait rather than spend an attempt on what may be the warehouse's failure.
 *
 * Why not cockatiel's SamplingBreaker: it opens the circuit, so in a 20 % brownout it would stop the 80 % of
 * shipments that go through; its window moves one slot per call, so after a quiet spell it still counts calls older
 * than its duration even once newer ones are enough (this rule reaches back only while the window holds too few); and
 * its figures are private. The rule here only judges; the consecutive breaker still acts.
 */

export interface BrownoutOptions {
  /** How far back the rule looks, milliseconds (WAREHOUSE_BROWNOUT_WINDOW_SECONDS). Default 30 s. */
  windowMs: number;
  /** Calls judged on at the least, reaching past `windowMs` if needed (WAREHOUSE_BROWNOUT_MIN_CALLS). Default 10. */
  minCalls: number;
  /** Share of those calls, in percent, that failed (WAREHOUSE_BROWNOUT_FAILURE_PERCENT). Default 10. */
  failurePercent: number;
  /** Different shipments (keys) among the failures (WAREHOUSE_BROWNOUT_MIN_ORDERS). Default 3. */
  minFailingKeys: number;
}

export const DEFAULT_BROWNOUT: BrownoutOptions = {
  windowMs: 30_000,
  minCalls: 10,
  failurePercent: 10,
  minFailingKeys: 3,
};

/** What the window holds now, and the rule's verdict on it. */
export interface RecentCalls {
  /** Calls the rule judges on (answered or failed): those of the window, or the last `minCalls` however old. */
  calls: number;
  /** Of those, the dependency failures. */
  failures: number;
  /** Different shipment keys among the failures. */
  failingKeys: number;
  /** How far back those calls go, milliseconds: the window's length, or more at low traffic. */
  windowMs: number;
  /** False until the process has made `minCalls` calls: too few to tell the warehouse's failures from an order's. */
  judged: boolean;
  /** True when the rule says the warehouse fails for everyone. */
  unhealthy: boolean;
}

export interface CallWindow {
  /** Records one call's outcome at `now` (ms since the epoch). */
  record(key: string, failed: boolean, now?: number): void;
  /** The window as of `now`. */
  recent(now?: number): RecentCalls;
}

export function createCallWindow(options: Partial<BrownoutOptions> = {}): CallWindow {
  const o = { ...DEFAULT_BROWNOUT, ...options };
  const calls: { at: number; key: string; failed: boolean }[] = [];
  /** Forgets calls older than the window, but never the last `minCalls`. */
  const prune = (now: number) => {
    let drop = 0;
    while (calls.length - drop > o.minCalls && calls[drop]!.at <= now - o.windowMs) drop += 1;
    if (drop > 0) calls.splice(0, drop);
  };
  return {
    record(key, failed, now = Date.now()) {
      prune(now);
      calls.push({ at: now, key, failed });
    },
    recent(now = Date.now()) {
      prune(now);
      const failed = calls.filter((c) => c.failed);
      const failingKeys = new Set(failed.map((c) => c.key)).size;
      const judged = calls.length >= o.minCalls;
      const unhealthy =
        judged && failed.length * 100 >= o.failurePercent * calls.length && failingKeys >= o.minFailingKeys;
      const windowMs = Math.max(o.windowMs, calls.length > 0 ? now - calls[0]!.at : 0);
      return { calls: calls.length, failures: failed.length, failingKeys, windowMs, judged, unhealthy };
    },
  };
}
