/**
 * What a process started, and how to stop it: each step that starts something says at once how to stop it, and
 * stop() stops everything in the reverse order — what started last stops first — naming at each moment what is still
 * stopping (a shutdown past its deadline logs it). A role's own lifecycle is included in the app's as one part, and
 * stops in its own order where it stands. A start-up that fails half way stops what it had started (`startOrUndo`).
 *
 * Like AsyncDisposableStack (which it is not, because that one cannot say what it is still disposing): one failing
 * stop is logged and the next one runs; stop() is idempotent.
 */
import type { Logger } from './log.js';

interface Part {
  name: string;
  stop?: () => unknown;
  inner?: Lifecycle;
}

export class Lifecycle {
  private readonly parts: Part[] = [];
  private stopping?: Promise<void>;
  /** Index of the part stopping now (counting down); parts above it have stopped. */
  private current = -1;

  constructor(private readonly logger: Logger) {}

  /** Registers how to stop what was just started, under a name a late shutdown can report. */
  defer(name: string, stop: () => unknown): void {
    if (this.stopping) throw new Error(`cannot add "${name}": the lifecycle is stopping`);
    this.parts.push({ name, stop });
  }

  /** Includes a part with its own lifecycle (a role): stopped, in its own order, where it stands in this one. */
  include(name: string, inner: Lifecycle): void {
    if (this.stopping) throw new Error(`cannot add "${name}": the lifecycle is stopping`);
    this.parts.push({ name, inner });
  }

  /** What stop() has not finished stopping yet, in the order it stops them; empty before stop() and once done. */
  stillStopping(): string[] {
    if (!this.stopping) return [];
    const left: string[] = [];
    for (let i = this.current; i >= 0; i -= 1) {
      const part = this.parts[i]!;
      if (part.inner) left.push(...(part.inner.stopping ? part.inner.stillStopping() : part.inner.names()));
      else left.push(part.name);
    }
    return left;
  }

  /** Stops every part, the last started first; resolves once all have stopped (or failed to, each logged). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (this.current = this.parts.length - 1; this.current >= 0; this.current -= 1) {
        const part = this.parts[this.current]!;
        try {
          await (part.inner ? part.inner.stop() : part.stop!());
        } catch (err) {
          this.logger.warn({ err, stopping: part.name }, 'error while stopping');
        }
      }
    })();
    return this.stopping;
  }

  /**
   * Runs a start-up over this lifecycle: if it throws, what it had started is stopped (last first) before the
   * error goes on.
   */
  async startOrUndo<T>(start: (life: this) => Promise<T>): Promise<T> {
    try {
      return await start(this);
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** Every part's name, in the order stop() takes them. */
  private names(): string[] {
    return this.parts.toReversed().flatMap((p) => (p.inner ? p.inner.names() : [p.name]));
  }
}
