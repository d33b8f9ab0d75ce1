/**
 * Per-order lanes over one partition's fetched records. Records with the same key (tenant/order) share a lane
 * and run one after another in offset order; different lanes run concurrently, so one slow order does not
 * hold up the others. Concurrency per partition is at most the number of lanes.
 *
 * A burst of one order's records (neighbours in their lane) may be started as one group and handed over in one go
 * (`group`): one call, one workflow task, for many records.
 *
 * Rule a reader must not break: a record may start only while it is fewer than `maxInFlight` records past the
 * oldest unfinished one. Only the contiguous finished prefix can be committed, so this window bounds what a
 * stuck lane makes the others hold back: records finished but not committable, all redelivered after a crash.
 */

/** The lane of `key` among `lanes`: a stable string hash, so one key always lands in the same lane. */
export function laneFor(key: string, lanes: number): number {
  let h = 0;
  for (let i = 0; i < key.length; i += 1) h = (h * 31 + key.charCodeAt(i)) | 0;
  return Math.abs(h) % lanes;
}

export interface LaneRun<T> {
  /** The partition's records, in offset order. */
  items: readonly T[];
  /** Number of lanes; default 8. */
  lanes: number;
  /** Most records past the oldest unfinished one that may be started (≥ 1). */
  maxInFlight: number;
  /** Lane key: records with equal keys run in order, one at a time. */
  keyOf(item: T): string;
  /** Processes one record: true when finished, false when abandoned (the lane stops; the record stays unfinished). */
  run(item: T): Promise<boolean>;
  /** Called once per finished record, in the order records finish. */
  onFinished(item: T): void;
  /**
   * Records of one key that stand next to each other in their lane are taken together, up to `max` of them, while
   * `fits` says the next one may join and the window (`maxInFlight`) already lets it start, and run by `run` in
   * one go: true when all finished, false when abandoned (none did). Absent: one record at a time.
   */
  group?: { max: number; fits(group: readonly T[], next: T): boolean; run(items: T[]): Promise<boolean> };
  /** When aborted, lanes start nothing more; records already running finish or are abandoned by `run`. */
  signal: AbortSignal;
}

/**
 * Runs every record through its lane; resolves when every lane has finished or stopped. An unexpected error
 * from `run` stops all lanes and is thrown after every running record has settled, so nothing outlives the call.
 */
export async function runInLanes<T>(opts: LaneRun<T>): Promise<void> {
  const { items, maxInFlight } = opts;
  const stop = new AbortController();
  const stopped = () => stop.signal.aborted || opts.signal.aborted;
  const finished = new Uint8Array(items.length);
  /** Index of the oldest unfinished record. */
  let head = 0;
  let waiters: (() => void)[] = [];
  const wakeAll = () => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  opts.signal.addEventListener('abort', wakeAll, { once: true });

  const lanes: number[][] = Array.from({ length: Math.max(1, opts.lanes) }, () => []);
  items.forEach((item, i) => lanes[laneFor(opts.keyOf(item), lanes.length)]!.push(i));

  /** The records a lane starts at its position `p`: one, or a group of one key's neighbours (`opts.group`). */
  const take = (lane: number[], p: number): number[] => {
    const first = lane[p]!;
    const taken = [first];
    const group = opts.group;
    if (!group) return taken;
    const key = opts.keyOf(items[first]!);
    while (taken.length < group.max && p + taken.length < lane.length) {
      const next = lane[p + taken.length]!;
      if (next >= head + maxInFlight || opts.keyOf(items[next]!) !== key) break;
      if (
        !group.fits(
          taken.map((j) => items[j]!),
          items[next]!,
        )
      )
        break;
      taken.push(next);
    }
    return taken;
  };

  let failure: { error: unknown } | undefined;
  try {
    await Promise.all(
      lanes.map(async (lane) => {
        for (let p = 0; p < lane.length;) {
          const i = lane[p]!;
          while (i >= head + maxInFlight && !stopped()) await new Promise<void>((resolve) => waiters.push(resolve));
          if (stopped()) return;
          const taken = take(lane, p);
          let done: boolean;
          try {
            done = taken.length === 1 ? await opts.run(items[i]!) : await opts.group!.run(taken.map((j) => items[j]!));
          } catch (error) {
            failure ??= { error };
            stop.abort();
            wakeAll();
            return;
          }
          if (!done) {
            // An abandoned record can never finish here: nothing behind it may start either.
            stop.abort();
            wakeAll();
            return;
          }
          for (const j of taken) finished[j] = 1;
          while (head < items.length && finished[head]) head += 1;
          for (const j of taken) opts.onFinished(items[j]!);
          wakeAll();
          p += taken.length;
        }
      }),
    );
  } finally {
    opts.signal.removeEventListener('abort', wakeAll);
  }
  if (failure) throw failure.error;
}
