/**
 * A deliberately changed copy of the workflow code, for the tests that show a replay failing: the order workflow
 * starts a one-second timer before it does anything else, a command no recorded history has at that point, so
 * every history of the real code diverges at its first command. Bundled like workflows/index.ts (src/domain/temporal.ts
 * workflowBundle); `fulfilment workflow replay --workflows test/workflow/replay-diverging-workflows.ts` uses it.
 */
import { sleep } from '@temporalio/workflow';
import { orderFulfilmentV2 as current } from '../../workflows/order-fulfilment.js';

export { pruneLedger } from '../../workflows/ledger-retention-run.js';

export async function orderFulfilmentV2(...args: Parameters<typeof current>): ReturnType<typeof current> {
  await sleep('1 second');
  return current(...args);
}
