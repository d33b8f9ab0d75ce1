/**
 * What the reconciler's tests share: a check's mismatches as `<kind> <order>` lines, easy to compare; and a scenario
 * with its tenant and window, with `fulfilment reconcile` run over them.
 */
import type { CheckResult } from '../../src/reconcile/mismatch.js';
import { scenario, type Scenario } from './harness.js';
import { cliOf, type CliRun } from './operator.js';

export function kinds(result: Pick<CheckResult, 'mismatches'>): string[] {
  return result.mismatches.map((m) => `${m.kind} ${m.orderId}`);
}

/** A scenario for one reconcile test file: its tenant, the window's start, and `fulfilment reconcile` over them. */
export interface ReconcileCase {
  s: Scenario;
  tenant: string;
  since: string;
  /** `fulfilment reconcile --since <since> --tenant <tenant> --settle 0s <more…>`: every state judged at once. */
  reconcile(...more: string[]): Promise<CliRun>;
}

export async function reconcileCase(name: string): Promise<ReconcileCase> {
  const s = await scenario(name);
  const since = new Date(Date.now() - 1000).toISOString();
  const tenant = s.tenant();
  return {
    s,
    tenant,
    since,
    reconcile: (...more) => cliOf(s)('reconcile', '--since', since, '--tenant', tenant, '--settle', '0s', ...more),
  };
}
