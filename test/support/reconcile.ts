/** What the reconciler's tests share: a check's mismatches as `<kind> <order>` lines, easy to compare. */
import type { CheckResult } from '../../src/reconcile/mismatch.js';

export function kinds(result: Pick<CheckResult, 'mismatches'>): string[] {
  return result.mismatches.map((m) => `${m.kind} ${m.orderId}`);
}
