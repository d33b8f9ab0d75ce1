/**
 * Backoff for transient failures, shared by everything one partition's batch does against one dependency.
 * When a call fails transiently the gate closes for a jittered, exponentially growing delay: no caller starts
 * work meanwhile (the partition is paused, not spinning); after the delay exactly one caller probes, and only
 * its success opens the gate for all. So an outage costs one attempt per delay per gate, never one per record.
 *
 * Delays use cockatiel's half jitter: attempt k waits between half and all of min(maxDelay, initialDelay·2^k),
 * which spreads instances apart and gives a hard floor, so `maxAttemptsWithin` bounds attempts in any window.
 */
import { ExponentialBackoff, halfJitterGenerator, type IBackoff } from 'cockatiel';
import { TransientError } from '../../base/errors.js';
import { BRIDGE_RETRY, type TransientRetry } from '../../base/retry-policies.js';
import { sleep } from '../../base/sleep.js';

export type { TransientRetry } from '../../base/retry-policies.js';

/** The bridge's default (src/base/retry-policies.ts BRIDGE_RETRY): attempts are unbounded, a transient failure is never dead-lettered. */
export const DEFAULT_TRANSIENT_RETRY: TransientRetry = BRIDGE_RETRY;

/** Thrown by a wait that was given up (shutdown, partition revoked): the work was not done and will be redelivered. */
export class Abandoned extends Error {
  override name = 'Abandoned';
}

/** An endless sequence of jittered delays (ms); `reset()` starts again from the first. */
export class DelaySequence {
  private current: IBackoff<unknown> | undefined;
  constructor(private readonly retry: TransientRetry) {}

  next(): number {
    this.current = this.current
      ? this.current.next(undefined)
      : new ExponentialBackoff({
          generator: halfJitterGenerator,
          initialDelay: this.retry.initialDelayMs,
          maxDelay: this.retry.maxDelayMs,
        }).next();
    return this.current.duration;
  }

  reset(): void {
    this.current = undefined;
  }
}

/**
 * The most attempts one gate (or one DelaySequence user) can make within `windowMs`: the first attempt, then one
 * after each delay, where delay k is at least floor(min(maxDelay, initialDelay·2^k) / 2).
 */
export function maxAttemptsWithin(windowMs: number, retry: TransientRetry): number {
  let elapsed = 0;
  let attempts = 1;
  for (let k = 0; ; k += 1) {
    const floor = Math.floor(Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** Math.min(k, 52)) / 2);
    if (elapsed + floor > windowMs) return attempts;
    elapsed += floor;
    attempts += 1;
  }
}

/** Resolves after `ms`, or rejects with Abandoned when `signal` aborts first. */
export async function sleepOrAbandon(ms: number, signal?: AbortSignal): Promise<void> {
  await sleep(ms, signal);
  if (signal?.aborted) throw new Abandoned('abandoned');
}

export interface GateEvents {
  /** A failed attempt that will be tried again (count it as a retry). */
  onRetry(error: Error): void;
  /** The gate closed for `delayMs` (once per backoff step: log it, pause the partition). */
  onBackoff(error: Error, delayMs: number): void;
}

export class BackoffGate {
  private readonly delays: DelaySequence;
  /** Epoch ms before which no caller may start; meaningful only while failing. */
  private openAt = 0;
  /** True from the first transient failure until a call succeeds. */
  private failing = false;
  /** Epoch ms of the first transient failure of the current failing spell. */
  private failingFrom = 0;
  /** True while the one probe after a backoff is running. */
  private probing = false;
  private waiters = new Set<() => void>();

  constructor(
    retry: TransientRetry,
    private readonly events: GateEvents,
  ) {
    this.delays = new DelaySequence(retry);
  }

  /** True from a transient failure until the next success: the dependency is treated as down. */
  get backingOff(): boolean {
    return this.failing;
  }

  /** Milliseconds since the gate began failing without a success in between; 0 while healthy. */
  failingForMs(now = Date.now()): number {
    return this.failing ? now - this.failingFrom : 0;
  }

  /** Milliseconds until the next probe may start; 0 when it may start now or the gate is healthy. */
  remainingMs(now = Date.now()): number {
    return this.failing ? Math.max(0, this.openAt - now) : 0;
  }

  /**
   * Runs `work` when the gate lets it, retrying transient failures (TransientError) until it succeeds; other
   * errors are thrown at once. Waiting ends with Abandoned when `signal` aborts — except that with `firstAttempt`
   * set, one attempt is made even when `signal` already aborted, provided the gate is not backing off
   * (a final offset commit on the way out).
   */
  async run<T>(work: () => Promise<T>, signal: AbortSignal, opts: { firstAttempt?: boolean } = {}): Promise<T> {
    let first = opts.firstAttempt ?? false;
    for (;;) {
      const probe = first && !this.failing ? false : await this.admit(signal);
      first = false;
      try {
        const value = await work();
        if (probe) this.probing = false;
        if (this.failing) {
          this.failing = false;
          this.delays.reset();
        }
        this.wakeAll();
        return value;
      } catch (err) {
        if (probe) this.probing = false;
        if (!(err instanceof TransientError)) {
          this.wakeAll();
          throw err;
        }
        // The first failure while healthy, or a failed probe, starts the next backoff step; calls that were
        // already in flight when the gate closed just join the wait.
        if (probe || !this.failing) {
          if (!this.failing) this.failingFrom = Date.now();
          this.failing = true;
          const delay = this.delays.next();
          this.openAt = Date.now() + delay;
          this.events.onBackoff(err, delay);
        }
        this.events.onRetry(err);
        this.wakeAll();
      }
    }
  }

  /**
   * Forgets a failing spell whose work is gone (a new consumer generation dropped what waited on it): the gate is
   * healthy again and waiting callers start at once. Without this, a gate nothing calls any more would report the
   * dependency as failing for ever. A probe still running that fails starts a new spell from the first delay.
   */
  forget(): void {
    if (!this.failing) return;
    this.failing = false;
    this.delays.reset();
    this.wakeAll();
  }

  /** Waits until the caller may start; true when it starts as the one probe after a backoff. */
  private async admit(signal: AbortSignal): Promise<boolean> {
    for (;;) {
      if (signal.aborted) throw new Abandoned('abandoned while backing off');
      if (!this.failing) return false;
      const wait = this.openAt - Date.now();
      if (!this.probing && wait <= 0) {
        this.probing = true;
        return true;
      }
      await this.wait(this.probing ? undefined : wait, signal);
    }
  }

  private wait(ms: number | undefined, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        if (timer) clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      this.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private wakeAll(): void {
    for (const w of [...this.waiters]) w();
  }
}
