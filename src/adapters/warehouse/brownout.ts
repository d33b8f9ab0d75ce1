/**
 * The brownout rule: whether this process's recent calls say the warehouse fails for everyone — or, while it answers
 * every other tenant, for one tenant — so that a dependency failure met now is an outage (the order waits) and not the
 * order's own (an attempt spent).
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
 * One tenant (judge): a failure of tenant T is judged on T's calls alone when the other tenants' calls of the window
 * are enough to judge (at least `minCalls`), fewer than `failurePercent` % of them failed, and one of them was answered
 * in the last ANSWERED_LATELY_MS — the warehouse answers everyone else now, so it is not down for everyone. T's calls are then judged by the same rule, on T's own history (T's
 * calls of the last `windowMs`, or T's last `minCalls` however old): T's calls fail by the rule → the warehouse fails
 * for T (T's orders wait, the others ship); fewer than `minCalls` of T's calls → too few to tell (the order waits, as
 * the process's first calls do); otherwise the failure is the order's own. In every other case — a single tenant, the
 * others failing too, too few others' calls — the failure is judged on everyone's calls, as above.
 *
 * Why not cockatiel's SamplingBreaker: it opens the circuit, so in a 20 % brownout it would stop the 80 % of
 * shipments that go through; its window moves one slot per call, so after a quiet spell it still counts calls older
 * than its duration even once newer ones are enough (this rule reaches back only while the window holds too few); and
 * its figures are private. The rule here only judges; the consecutive breaker still acts.
 */

/**
 * How recent another tenant's answered call must be for a tenant's failure to be judged on its own calls: the
 * warehouse was seen answering the others just now. Older answers prove nothing about now — a warehouse that went down
 * while only one tenant called would be judged that tenant's alone, its failures kept from the breaker (it was called
 * 631 times in warehouse-brownout's slow case instead of 238 before this bound).
 */
export const ANSWERED_LATELY_MS = 5_000;

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

/** Tenants whose own history this process keeps (the least recently called forgotten first): a bound on memory. */
export const MAX_TENANTS_JUDGED = 10_000;

/** How a dependency failure of one tenant is judged (CallWindow.judge). */
export interface Judgement {
  /**
   * Whose calls the verdict is on: `everyone` (the window's calls) or `tenant` (the tenant's alone: the other tenants'
   * calls of the window were enough to judge and the warehouse answered them).
   */
  scope: 'everyone' | 'tenant';
  /** The calls judged and the verdict: `unhealthy` → it fails for them; not `judged` → too few to tell; else the order's own. */
  calls: RecentCalls;
  /** The other tenants' calls of the window and how many failed (scope `tenant`). */
  others?: { calls: number; failures: number };
}

export interface CallWindow {
  /** Records one call's outcome at `now` (ms since the epoch), for shipment `key` of `tenant`. */
  record(key: string, failed: boolean, now?: number, tenant?: string): void;
  /** The window as of `now`: everyone's calls. */
  recent(now?: number): RecentCalls;
  /** How a dependency failure of `tenant` met at `now` is judged (record it first). */
  judge(tenant: string, now?: number): Judgement;
}

interface Call {
  at: number;
  key: string;
  tenant: string;
  failed: boolean;
}

export function createCallWindow(options: Partial<BrownoutOptions> = {}): CallWindow {
  const o = { ...DEFAULT_BROWNOUT, ...options };
  const calls: Call[] = [];
  /** Each tenant's own history, least recently called first (a Map keeps insertion order; a call moves it last). */
  const byTenant = new Map<string, Call[]>();
  /** Forgets calls older than the window, but never the last `minCalls`. */
  const prune = (list: Call[], now: number) => {
    let drop = 0;
    while (list.length - drop > o.minCalls && list[drop]!.at <= now - o.windowMs) drop += 1;
    if (drop > 0) list.splice(0, drop);
  };
  /** The rule's verdict on `list` at `now`. */
  const verdict = (list: readonly Call[], now: number): RecentCalls => {
    const failed = list.filter((c) => c.failed);
    const failingKeys = new Set(failed.map((c) => c.key)).size;
    const judged = list.length >= o.minCalls;
    const unhealthy =
      judged && failed.length * 100 >= o.failurePercent * list.length && failingKeys >= o.minFailingKeys;
    const windowMs = Math.max(o.windowMs, list.length > 0 ? now - list[0]!.at : 0);
    return { calls: list.length, failures: failed.length, failingKeys, windowMs, judged, unhealthy };
  };
  const recent = (now: number) => {
    prune(calls, now);
    return verdict(calls, now);
  };
  return {
    record(key, failed, now = Date.now(), tenant = '') {
      const call = { at: now, key, tenant, failed };
      prune(calls, now);
      calls.push(call);
      const own = byTenant.get(tenant) ?? [];
      byTenant.delete(tenant);
      prune(own, now);
      own.push(call);
      byTenant.set(tenant, own);
      if (byTenant.size > MAX_TENANTS_JUDGED) byTenant.delete(byTenant.keys().next().value!);
    },
    recent: (now = Date.now()) => recent(now),
    judge(tenant, now = Date.now()) {
      const everyone = recent(now);
      const others = calls.filter((c) => c.tenant !== tenant);
      const othersFailed = others.filter((c) => c.failed).length;
      const own = byTenant.get(tenant) ?? [];
      prune(own, now);
      const othersAnswered =
        others.length >= o.minCalls &&
        othersFailed * 100 < o.failurePercent * others.length &&
        others.some((c) => !c.failed && c.at >= now - ANSWERED_LATELY_MS);
      if (!othersAnswered) return { scope: 'everyone', calls: everyone };
      return { scope: 'tenant', calls: verdict(own, now), others: { calls: others.length, failures: othersFailed } };
    },
  };
}
