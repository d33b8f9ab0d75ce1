/**
 * The warehouse retry policy — an order's own shipment attempts, when the warehouse answers others but fails for this
 * order (its circuit closed, the brownout rule not met) — written once. Everything else derives from it: the workflow's
 * activity options (workflows/activity-options.ts WAREHOUSE_ACTIVITY: Temporal's attempts and fallback intervals), the
 * defaults of WAREHOUSE_RETRY_INITIAL_MS and WAREHOUSE_RETRY_MAX_MS (src/base/config/worker-settings.ts), the activity's
 * jittered delays without configuration (src/base/retry-policies.ts SHIPMENT_BACKOFF);
 * test/unit/vocabulary/warehouse-retry-policy.unit.test.ts holds the docs' figures to it.
 *
 * Rules a reader must not break:
 * - data only, importing nothing: the workflow bundle imports it (the allow-list in eslint.config.js);
 * - the delays are configurable (the activity sets each next delay from them); the attempts are not: they are the
 *   retry policy the workflow schedules the activity with, fixed per build, so a change of them ships as a new build
 *   (docs/changing-the-workflow.md) and never changes an order already running.
 */
export const WAREHOUSE_RETRY = {
  /** The first delay between attempts, ms; doubled after each attempt (half-jittered by the activity). */
  initialDelayMs: 2_000,
  backoffCoefficient: 2,
  /** The longest delay, ms. */
  maxDelayMs: 60_000,
  /** Attempts in all, then the order is held as failed. */
  attempts: 8,
} as const;
