/**
 * An order's run waiting for its next event (orderFulfilmentV2, order-fulfilment.ts): until an event or an accepted
 * operator's request arrives, or the window it waits in — the cancellation grace, the linger, the wait for the
 * warehouse — passes. The window's one timer keeps running across the events that arrive in it, and is cancelled
 * when the order leaves the status it was for. Like the run's other steps, a function over the run (WindowRunPort);
 * its timers are the run's commands, held by the replay gate (docs/changing-the-workflow.md). Deterministic code
 * only (bundled into the sandbox).
 */
import { CancellationScope, condition, sleep } from '@temporalio/workflow';
import type { OrderEvent } from '../src/vocabulary/order.js';

/** The one timer of the window in progress: until when, what the Web UI calls it, and whether it passed. */
export interface EventWindow {
  deadline: number;
  summary: string;
  scope: CancellationScope;
  passed: boolean;
}

/** What the wait for an event needs of the run. */
export interface WindowRunPort {
  readonly inbox: OrderEvent[];
  /** Accepted operator's requests not yet applied: here, only whether one waits. */
  readonly requests: readonly unknown[];
  /** The one timer of the grace or linger window in progress, kept while events arrive. */
  window?: EventWindow;
}

/**
 * Waits until an event (or an accepted retry) arrives or `deadline` (workflow time, ms) passes; true when one
 * arrived. The window's one timer keeps running across the events that arrive in it.
 */
export async function waitForEvent(
  run: WindowRunPort,
  deadline?: number,
  summary?: string,
  woken: () => boolean = () => false,
): Promise<boolean> {
  const arrived = () => run.inbox.length > 0 || run.requests.length > 0 || woken();
  if (deadline === undefined) {
    await condition(arrived);
    return true;
  }
  if (run.window?.deadline !== deadline || run.window.summary !== summary) {
    closeWindow(run);
    const remaining = deadline - Date.now();
    if (remaining <= 0) return false;
    const window = { deadline, summary: summary ?? 'wait', scope: new CancellationScope(), passed: false };
    window.scope
      .run(() => sleep(remaining, { summary }))
      .then(
        () => void (window.passed = true),
        () => undefined,
      );
    run.window = window;
  }
  const window = run.window!;
  await condition(() => arrived() || window.passed);
  if (arrived()) return true;
  run.window = undefined;
  return false;
}

/** Cancels the window's timer when the order left the status it was for. */
export function closeWindow(run: WindowRunPort): void {
  if (run.window && !run.window.passed) run.window.scope.cancel();
  run.window = undefined;
}
