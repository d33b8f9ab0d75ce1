/**
 * Per-order lanes over one partition's read-ahead window: the records read and not yet finished, appended in offset
 * order as fetches bring them. Records with the same key (tenant/order) share a lane and run one after another in
 * offset order; every key has a lane of its own, so any order's next record may start while others run — one
 * tenant's backlog does not stand in front of another tenant's orders here (which of the lane heads gets a delivery
 * slot first is the process-wide fair share's choice, fair-slots.ts).
 *
 * A burst of one order's records (neighbours in its lane) may be started as one group and handed over in one go
 * (`group`): one call, one workflow task, for many records.
 *
 * Rules a reader must not break:
 * - a record starts only when `mayStart` says so — the single predicate for whether a record is eligible: it is the
 *   oldest unfinished record, or it is fewer than `readAhead.records` records past that one and the bytes from that
 *   one through it are at most `readAhead.bytes`, and the `gate` given (if any) lets it. Only the contiguous finished
 *   prefix can be committed, so the read-ahead bounds what a stuck lane makes the others hold back: records finished
 *   but not committable, all redelivered after a crash. A `gate` that changes its mind calls `recheck()`;
 * - an abandoned record (run answered false) can never finish here: the window stops, nothing new starts in any
 *   lane, and the records running settle; an error from `run` does the same and is reported once by `onFailure`.
 */

export interface LaneWindowOptions<T> {
  /** Lane key: records with equal keys run in order, one at a time. */
  keyOf(item: T): string;
  /** A record's size, for the byte bound of the read-ahead. */
  bytesOf(item: T): number;
  /** Most records, and bytes, from the oldest unfinished record through one that may start (each ≥ 1). */
  readAhead: { records: number; bytes: number };
  /** A further rule a record must pass to start (after the read-ahead); call `recheck()` when its answer changes. */
  gate?(item: T): boolean;
  /** Processes one record: true when finished, false when abandoned (the window stops; the record stays unfinished). */
  run(item: T): Promise<boolean>;
  /**
   * Records of one key queued next to each other in its lane are taken together, up to `max` of them, while `fits`
   * says the next one may join and `mayStart` already lets it start, and run by `run` in one go: true when all
   * finished, false when abandoned (none did). Absent: one record at a time.
   */
  group?: { max: number; fits(group: readonly T[], next: T): boolean; run(items: T[]): Promise<boolean> };
  /** Called once per finished record, in the order records finish. */
  onFinished(item: T): void;
  /** An unexpected error from `run` (the window has stopped); called once. */
  onFailure(error: unknown): void;
}

interface Entry<T> {
  item: T;
  key: string;
  /** Bytes of every record appended before this one. */
  bytesBefore: number;
  done: boolean;
}

interface Lane {
  key: string;
  /** Indexes of the lane's unfinished records, in offset order; the first is running when `running`. */
  queue: number[];
  running: boolean;
}

export class LaneWindow<T> {
  private readonly entries = new Map<number, Entry<T>>();
  private readonly lanes = new Map<string, Lane>();
  /** Lane heads that may not start yet, by index, ascending. */
  private blocked: number[] = [];
  /** Index of the oldest unfinished record; `end` when none is. */
  private head = 0;
  /** Index the next appended record gets. */
  private end = 0;
  private bytesAppended = 0;
  private running = 0;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly opts: LaneWindowOptions<T>) {}

  /** Records from the oldest unfinished one through the last read (finished ones among them included). */
  get span(): number {
    return this.end - this.head;
  }

  /** True when the read-ahead holds as much as it may: read no more until records finish. */
  get full(): boolean {
    const { records, bytes } = this.opts.readAhead;
    return this.span >= records || this.bytesAppended - this.bytesBefore(this.head) >= bytes;
  }

  /** True once an abandoned record or an error stopped it, or `stop()` was called. */
  get isStopped(): boolean {
    return this.stopped;
  }

  /** The records read and not finished, oldest first. */
  *unfinished(): Generator<T> {
    for (let i = this.head; i < this.end; i += 1) {
      const e = this.entries.get(i)!;
      if (!e.done) yield e.item;
    }
  }

  /** Adds records read after those already here (in offset order); those that may start, start. */
  append(items: readonly T[]): void {
    // Every record is queued before any lane starts, so a lane takes its neighbours from this fetch into a group.
    const woken: Lane[] = [];
    for (const item of items) {
      const i = this.end;
      const key = this.opts.keyOf(item);
      this.entries.set(i, { item, key, bytesBefore: this.bytesAppended, done: false });
      this.bytesAppended += this.opts.bytesOf(item);
      this.end += 1;
      let lane = this.lanes.get(key);
      if (!lane) this.lanes.set(key, (lane = { key, queue: [], running: false }));
      lane.queue.push(i);
      if (lane.queue.length === 1) woken.push(lane);
    }
    for (const lane of woken) this.startLane(lane);
  }

  /**
   * The single predicate for whether the record at index `i` is eligible to start: the read-ahead allows it and the
   * further gate, if any, lets it.
   */
  mayStart(i: number): boolean {
    return this.withinReadAhead(i) && (this.opts.gate?.(this.entries.get(i)!.item) ?? true);
  }

  /** Starts every waiting lane head the read-ahead and the gate now allow (after the gate changed its mind). */
  recheck(): void {
    if (this.stopped) return;
    const still: number[] = [];
    const ready: number[] = [];
    for (const i of this.blocked) {
      if (this.mayStart(i)) ready.push(i);
      else still.push(i);
    }
    this.blocked = still;
    for (const i of ready) this.startLane(this.lanes.get(this.entries.get(i)!.key)!);
  }

  /** Starts nothing more; records running settle (see `idle()`). */
  stop(): void {
    this.stopped = true;
    this.blocked = [];
    this.wakeIdle();
  }

  /** Resolves once nothing runs and either nothing is left to run or the window has stopped. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.running === 0 && (this.stopped || this.span === 0);
  }

  private wakeIdle(): void {
    if (!this.isIdle()) return;
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }

  private bytesBefore(i: number): number {
    return i >= this.end ? this.bytesAppended : this.entries.get(i)!.bytesBefore;
  }

  private withinReadAhead(i: number): boolean {
    if (i === this.head) return true;
    const { records, bytes } = this.opts.readAhead;
    const through = this.bytesBefore(i + 1);
    return i - this.head < records && through - this.bytesBefore(this.head) <= bytes;
  }

  /** Starts the lane's head (with its neighbours, when grouping) if it may start; otherwise it waits as blocked. */
  private startLane(lane: Lane): void {
    if (this.stopped || lane.running || lane.queue.length === 0) return;
    const first = lane.queue[0]!;
    if (!this.mayStart(first)) {
      this.block(first);
      return;
    }
    const taken = this.take(lane);
    lane.running = true;
    this.running += 1;
    const items = taken.map((j) => this.entries.get(j)!.item);
    let work: Promise<boolean>;
    try {
      work = taken.length === 1 ? this.opts.run(items[0]!) : this.opts.group!.run(items);
    } catch (error) {
      work = Promise.reject(error);
    }
    work.then(
      (done) => this.settle(lane, taken, done),
      (error: unknown) => {
        const first = !this.stopped;
        this.settle(lane, taken, false);
        if (first) this.opts.onFailure(error);
      },
    );
  }

  /** The lane's head and, when grouping, the neighbours queued behind it that may join it. */
  private take(lane: Lane): number[] {
    const taken = [lane.queue[0]!];
    const group = this.opts.group;
    if (!group) return taken;
    while (taken.length < group.max && taken.length < lane.queue.length) {
      const next = lane.queue[taken.length]!;
      if (!this.mayStart(next)) break;
      const nextItem = this.entries.get(next)!.item;
      if (
        !group.fits(
          taken.map((j) => this.entries.get(j)!.item),
          nextItem,
        )
      )
        break;
      taken.push(next);
    }
    return taken;
  }

  private settle(lane: Lane, taken: number[], done: boolean): void {
    lane.running = false;
    this.running -= 1;
    if (!done) {
      // An abandoned record can never finish here: nothing behind it may start either.
      this.stop();
      return;
    }
    lane.queue.splice(0, taken.length);
    for (const j of taken) this.entries.get(j)!.done = true;
    const headBefore = this.head;
    while (this.head < this.end && this.entries.get(this.head)!.done) this.head += 1;
    for (const j of taken) this.opts.onFinished(this.entries.get(j)!.item);
    for (let i = headBefore; i < this.head; i += 1) this.entries.delete(i);
    if (lane.queue.length === 0) this.lanes.delete(lane.key);
    else this.startLane(lane);
    if (this.head !== headBefore) this.releaseBlocked();
    this.wakeIdle();
  }

  /** The oldest unfinished record moved: blocked heads now within the read-ahead start, oldest first. */
  private releaseBlocked(): void {
    if (this.stopped) return;
    let n = 0;
    while (n < this.blocked.length && this.withinReadAhead(this.blocked[n]!)) n += 1;
    if (n === 0) return;
    const candidates = this.blocked.slice(0, n);
    this.blocked = this.blocked.slice(n);
    for (const i of candidates) this.startLane(this.lanes.get(this.entries.get(i)!.key)!);
  }

  private block(i: number): void {
    let lo = 0;
    let hi = this.blocked.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.blocked[mid]! < i) lo = mid + 1;
      else hi = mid;
    }
    this.blocked.splice(lo, 0, i);
  }
}

/**
 * Runs a fixed list of records (in offset order) through a window; resolves when every record finished or the
 * window stopped, once nothing runs. An unexpected error from `run` is thrown after every running record settled.
 */
export async function runInLanes<T>(
  opts: Omit<LaneWindowOptions<T>, 'onFailure' | 'bytesOf' | 'readAhead'> & {
    items: readonly T[];
    readAhead: { records: number; bytes?: number };
    bytesOf?(item: T): number;
    signal: AbortSignal;
  },
): Promise<void> {
  let failure: { error: unknown } | undefined;
  const w = new LaneWindow<T>({
    ...opts,
    bytesOf: opts.bytesOf ?? (() => 0),
    readAhead: { records: opts.readAhead.records, bytes: opts.readAhead.bytes ?? Number.POSITIVE_INFINITY },
    onFailure: (error) => (failure ??= { error }),
  });
  const stop = () => w.stop();
  if (opts.signal.aborted) return;
  opts.signal.addEventListener('abort', stop, { once: true });
  try {
    w.append(opts.items);
    await w.idle();
  } finally {
    opts.signal.removeEventListener('abort', stop);
  }
  if (failure) throw failure.error;
}
