/**
 * The brownout rule: whether this process's recent calls say the warehouse fails for everyone, so that a dependency
 * failure met now is an outage (the order waits) and not the order's own (an attempt spent).
 *
 * The warehouse fails for everyone when, over the last `windowMs` of calls that reached it (or tried to: the circuit's
 * fast refusals are not calls), at least `minCalls` went out, at least `failurePercent` % of them failed (5xx, timeout,
 * unreachable), and the failures were of at least `minFailingKeys` different shipments. The last figure keeps one
 * order whose requests the warehouse fails again and again (its own fault) from ever being judged "the warehouse":
 * it spends its attempts and fails, as any order failing alone does.
 *
 * Why not cockatiel's SamplingBreaker: it opens the circuit, so in a 20 % brownout it would stop the 80 % of
 * shipments that go through; its window moves one slot per call, so after a quiet spell it still counts calls older
 * than its duration; and its figures are private. The rule here only judges; the consecutive breaker still acts.
 */

export interface BrownoutOptions {
  /** How far back the rule looks, milliseconds (WAREHOUSE_BROWNOUT_WINDOW_SECONDS). Default 30 s. */
  windowMs: number;
  /** Calls the window must hold before it judges at all (WAREHOUSE_BROWNOUT_MIN_CALLS). Default 10. */
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
  /** Calls that went out in the window (answered or failed). */
  calls: number;
  /** Of those, the dependency failures. */
  failures: number;
  /** Different shipment keys among the failures. */
  failingKeys: number;
  /** The window's length, milliseconds. */
  windowMs: number;
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
  const prune = (now: number) => {
    let drop = 0;
    while (drop < calls.length && calls[drop]!.at <= now - o.windowMs) drop += 1;
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
      const unhealthy =
        calls.length >= o.minCalls &&
        failed.length * 100 >= o.failurePercent * calls.length &&
        failingKeys >= o.minFailingKeys;
      return { calls: calls.length, failures: failed.length, failingKeys, windowMs: o.windowMs, unhealthy };
    },
  };
}
