/**
 * A token bucket: `ratePerSecond` tokens accrue continuously up to `capacity`; taking waits until enough are
 * there. Capacity bounds the burst after an idle spell; the long-run rate never exceeds `ratePerSecond`.
 * The clock is injected so tests check the pacing without waiting.
 */
import { sleep } from '../base/sleep.js';

export interface Clock {
  /** Milliseconds on a monotonic-enough scale. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: (ms) => sleep(ms),
};

export interface TakeOptions {
  /** Longest single sleep, ms (default: unbounded); `onWait` runs between sleeps, e.g. to heartbeat. */
  maxSleepMs?: number;
  onWait?: () => Promise<unknown> | unknown;
}

export class TokenBucket {
  private tokens: number;
  private last: number;

  /**
   * @param ratePerSecond tokens added per second, > 0
   * @param capacity most tokens held at once, ≥ 1; the bucket starts full
   */
  constructor(
    readonly ratePerSecond: number,
    readonly capacity = 1,
    private readonly clock: Clock = systemClock,
  ) {
    if (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond))
      throw new RangeError(`rate must be a finite number > 0, got ${ratePerSecond}`);
    if (!(capacity >= 1)) throw new RangeError(`capacity must be ≥ 1, got ${capacity}`);
    this.tokens = capacity;
    this.last = clock.now();
  }

  /** The CLI's bucket for a rate: a burst of at most a tenth of a second's worth (at least 1 token). */
  static perSecond(rate: number, clock: Clock = systemClock): TokenBucket {
    return new TokenBucket(rate, Math.max(1, Math.ceil(rate / 10)), clock);
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) * this.ratePerSecond) / 1000);
    this.last = now;
  }

  /** Takes `n` tokens if they are there now; never waits. */
  tryTake(n = 1): boolean {
    this.refill();
    if (this.tokens + 1e-9 < n) return false;
    this.tokens -= n;
    return true;
  }

  /** Milliseconds until `n` tokens will be there (0 when they are now). */
  waitTime(n = 1): number {
    this.refill();
    return Math.max(0, ((n - this.tokens) * 1000) / this.ratePerSecond);
  }

  /** Waits until `n` tokens are there, then takes them. */
  async take(n = 1, opts: TakeOptions = {}): Promise<void> {
    if (n > this.capacity) throw new RangeError(`cannot take ${n} tokens from a bucket of ${this.capacity}`);
    while (!this.tryTake(n)) {
      await this.clock.sleep(Math.max(1, Math.min(this.waitTime(n), opts.maxSleepMs ?? Infinity)));
      await opts.onWait?.();
    }
  }
}
