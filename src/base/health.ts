/**
 * Liveness and readiness, served beside /metrics (src/base/metrics.ts): `/livez` is 200 until the process is stopping
 * for good; `/readyz` is 200 only while every check of the roles this process runs passes. Checks are cheap and
 * bounded: each has a short timeout, one evaluation runs at a time, and its result is reused for `cacheMs`, so a
 * probe storm costs at most one `SELECT 1` and one Temporal RPC per `cacheMs`.
 */
import { withTimeout } from './timeout.js';

/** The outcome of one check; `reason` says why when it is not ok. */
export interface CheckResult {
  ok: boolean;
  reason?: string;
}

/** One readiness check; it may throw (not ok, the error's message as reason). */
export type Check = () => CheckResult | Promise<CheckResult>;

export interface Readiness {
  ready: boolean;
  checks: Record<string, CheckResult>;
}

export interface Liveness {
  live: boolean;
  reason?: string;
}

export interface HealthOptions {
  /** How long one evaluation of the checks is reused, ms. Default 1000. */
  cacheMs?: number;
  /** Longest one check may take before it counts as failed, ms. Default 2000. */
  timeoutMs?: number;
}

export class Health {
  private readonly checks = new Map<string, Check>();
  private readonly cacheMs: number;
  private readonly timeoutMs: number;
  private starting: string | undefined = 'starting';
  private stoppingReason: string | undefined;
  private cached: { at: number; value: Readiness } | undefined;
  private inFlight: Promise<Readiness> | undefined;

  constructor(opts: HealthOptions = {}) {
    this.cacheMs = opts.cacheMs ?? 1000;
    this.timeoutMs = opts.timeoutMs ?? 2000;
  }

  /** Adds (or replaces) the check called `name`. */
  set(name: string, check: Check): void {
    this.checks.set(name, check);
    this.cached = undefined;
  }

  /** Start-up is under way: not ready, with `reason` (for instance what it is waiting for). */
  startingUp(reason: string): void {
    this.starting = reason;
    this.cached = undefined;
  }

  /**
   * Wraps one start-up attempt (for waitForDependency): while it keeps failing, readiness says what start-up is
   * waiting for and the last error.
   */
  attempting<T>(dependency: string, attempt: () => Promise<T>): () => Promise<T> {
    return async () => {
      this.startingUp(`connecting to ${dependency}`);
      try {
        return await attempt();
      } catch (err) {
        this.startingUp(`waiting for ${dependency}: ${(err as Error).message ?? String(err)}`);
        throw err;
      }
    };
  }

  /** Start-up finished: from now on the checks alone decide. */
  started(): void {
    this.starting = undefined;
    this.cached = undefined;
  }

  /** The process is stopping for good (a signal, or a role that stopped): not ready and no longer live. */
  stopping(reason: string): void {
    this.stoppingReason ??= reason;
    this.cached = undefined;
  }

  liveness(): Liveness {
    return this.stoppingReason === undefined ? { live: true } : { live: false, reason: this.stoppingReason };
  }

  /** Every check's outcome; evaluated at most once per `cacheMs`, never twice at the same time. */
  readiness(): Promise<Readiness> {
    if (this.cached && Date.now() - this.cached.at < this.cacheMs) return Promise.resolve(this.cached.value);
    this.inFlight ??= this.evaluate().then((value) => {
      this.cached = { at: Date.now(), value };
      this.inFlight = undefined;
      return value;
    });
    return this.inFlight;
  }

  private async evaluate(): Promise<Readiness> {
    const checks: Record<string, CheckResult> = {};
    if (this.stoppingReason !== undefined) checks.process = { ok: false, reason: `stopping: ${this.stoppingReason}` };
    else if (this.starting !== undefined) checks.startup = { ok: false, reason: this.starting };
    const names = [...this.checks.keys()];
    const results = await Promise.all(
      names.map(async (name) => {
        try {
          return await withTimeout(
            Promise.resolve(this.checks.get(name)!()),
            this.timeoutMs,
            `the ${name} check did not answer within ${this.timeoutMs} ms`,
          );
        } catch (err) {
          return { ok: false, reason: (err as Error).message || String(err) };
        }
      }),
    );
    names.forEach((name, i) => (checks[name] = results[i]!));
    return { ready: Object.values(checks).every((c) => c.ok), checks };
  }
}
