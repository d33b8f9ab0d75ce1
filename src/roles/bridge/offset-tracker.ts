/**
 * Tracks one partition's fetched records so that only the contiguous prefix of finished ones is committed:
 * a record that finished early never lets the commit jump over one still in flight before it. Offsets may
 * have gaps (compaction, transaction markers); only the order in which records were begun matters.
 */
interface Entry {
  offset: bigint;
  timestampMs: number;
  done: boolean;
}

export class OffsetTracker {
  /** Begun records in offset order; the finished head is dropped as the commit position moves past it. */
  private queue: Entry[] = [];
  private readonly byOffset = new Map<bigint, Entry>();
  /** Next offset to consume: every begun record below it is finished. */
  private position: bigint | undefined;

  begin(offset: string, timestampMs: number): void {
    const o = BigInt(offset);
    if (this.position !== undefined && o < this.position) return; // refetch of something already committed
    if (this.byOffset.has(o)) return;
    const last = this.queue[this.queue.length - 1];
    if (last && o < last.offset)
      throw new Error(`offset ${o} begun after ${last.offset}: records must be begun in order`);
    const entry = { offset: o, timestampMs, done: false };
    this.queue.push(entry);
    this.byOffset.set(o, entry);
  }

  /** Marks `offset` finished; returns the new commit position when the contiguous prefix advanced. */
  finish(offset: string): string | undefined {
    const entry = this.byOffset.get(BigInt(offset));
    if (!entry || entry.done) return undefined;
    entry.done = true;
    let advanced = false;
    let head = 0;
    while (head < this.queue.length && this.queue[head]!.done) {
      this.position = this.queue[head]!.offset + 1n;
      this.byOffset.delete(this.queue[head]!.offset);
      head += 1;
      advanced = true;
    }
    if (head > 0) this.queue = this.queue.slice(head);
    return advanced ? this.position!.toString() : undefined;
  }

  /** The offset a commit should name now (next to consume), or undefined when nothing finished yet. */
  commitPosition(): string | undefined {
    return this.position?.toString();
  }

  /** Timestamp (ms) of the oldest record begun but not finished, or undefined when none is. */
  oldestPendingTimestamp(): number | undefined {
    let oldest: number | undefined;
    for (const e of this.queue) if (!e.done && (oldest === undefined || e.timestampMs < oldest)) oldest = e.timestampMs;
    return oldest;
  }

  /** Records begun and not yet committed past. */
  get inFlight(): number {
    return this.queue.length;
  }

  /**
   * Forgets the records begun and not committed past (they are refetched from the returned offset, the oldest
   * unfinished one); the commit position stays. Undefined when nothing was begun past it.
   */
  forgetUnfinished(): string | undefined {
    const from = this.queue[0]?.offset;
    this.queue = [];
    this.byOffset.clear();
    return from?.toString();
  }

  /** Forgets everything (the partition was revoked). */
  reset(): void {
    this.queue = [];
    this.byOffset.clear();
    this.position = undefined;
  }
}
