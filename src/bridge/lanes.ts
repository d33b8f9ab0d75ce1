/**
 * Per-order lanes over one partition's fetched records. Records with the same key (tenant/order) share a lane
 * and run one after another in offset order; different lanes run concurrently, so one slow order does not
 * hold up the others. Concurrency per partition is at most the number of lanes.
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

  let failure: { error: unknown } | undefined;
  try {
    await Promise.all(
      lanes.map(async (lane) => {
        for (const i of lane) {
          while (i >= head + maxInFlight && !stopped()) await new Promise<void>((resolve) => waiters.push(resolve));
          if (stopped()) return;
          let done: boolean;
          try {
            done = await opts.run(items[i]!);
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
          finished[i] = 1;
          while (head < items.length && finished[head]) head += 1;
          opts.onFinished(items[i]!);
          wakeAll();
        }
      }),
    );
  } finally {
    opts.signal.removeEventListener('abort', wakeAll);
  }
  if (failure) throw failure.error;
}
