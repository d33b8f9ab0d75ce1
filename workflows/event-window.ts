/**
 * An order's run waiting for its next event (orderFulfilmentV2, order-fulfilment.ts): until an event or an accepted
 * operator's request arrives, or the window it waits in — the cancellation grace, the linger, the wait for the
 * warehouse — passes. The window owns its one timer, which keeps running across the events that arrive in it and is
 * cancelled when the order leaves the status it was for. Its timers are the run's commands, held by the replay gate
 * (docs/changing-the-workflow.md). Deterministic code only (bundled into the sandbox).
 */
import { CancellationScope, condition, sleep } from '@temporalio/workflow';
import type { OrderRun } from './order-run.js';

/** The one timer of the window in progress: until when, what the Web UI calls it, and whether it passed. */
interface WindowTimer {
  deadline: number;
  summary: string;
  scope: CancellationScope;
  passed: boolean;
}

/** The run's wait for an event, and the one timer of the window in progress. */
export class EventWindow {
  private timer?: WindowTimer;

  constructor(private readonly run: OrderRun) {}

  /**
   * Waits until an event (or an accepted request, or `woken`) arrives or `deadline` (workflow time, ms) passes; true
   * when one arrived. Without a deadline it waits for an event alone.
   */
  async waitForEvent(deadline?: number, summary?: string, woken: () => boolean = () => false): Promise<boolean> {
    const arrived = () => this.run.hasWork() || woken();
    if (deadline === undefined) {
      await condition(arrived);
      return true;
    }
    if (this.timer?.deadline !== deadline || this.timer.summary !== summary) {
      this.close();
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      const timer = { deadline, summary: summary ?? 'wait', scope: new CancellationScope(), passed: false };
      timer.scope
        .run(() => sleep(remaining, { summary }))
        .then(
          () => void (timer.passed = true),
          () => undefined,
        );
      this.timer = timer;
    }
    const timer = this.timer!;
    await condition(() => arrived() || timer.passed);
    if (arrived()) return true;
    this.timer = undefined;
    return false;
  }

  /** Cancels the window's timer when the order left the status it was for. */
  close(): void {
    if (this.timer && !this.timer.passed) this.timer.scope.cancel();
    this.timer = undefined;
  }
}
