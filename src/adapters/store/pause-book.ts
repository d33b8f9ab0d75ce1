/**
 * The operators' pauses of shipping as one worker sees them: read from shipping_pauses every `refreshMs` (2 s by
 * default) in the background, so that a shipment attempt costs no query of its own. A pause therefore takes hold
 * within that time; `fulfilment shipping pause` says so. A read that fails keeps the last pauses read (none before
 * the first) and is reported once per failing spell. Each read first ends the pauses whose resume (`--rate`) stopped
 * holding them (src/adapters/store/pause-releases.ts), so that the resumers wake what those held.
 */
import type { Db } from './db.js';
import { endLapsedReleases, type LapsedRelease } from './pause-releases.js';
import { pauseFor, pausesInForce, type ShippingPause } from './shipment-waits.js';

export interface PauseBook {
  /** The pause that holds `tenantId`'s shipments now, as last read (the first call waits for the first read). */
  pauseFor(tenantId: string): Promise<ShippingPause | undefined>;
  stop(): void;
}

export const DEFAULT_PAUSE_REFRESH_MS = 2_000;

export function createPauseBook(
  db: Pick<Db, 'query'>,
  opts: {
    refreshMs?: number;
    onRead?: (pauses: readonly ShippingPause[]) => void;
    onReadFailed?: (err: Error) => void;
    /** Told of each pause this reader ended because its resume stopped holding it. */
    onLapsedRelease?: (ended: LapsedRelease) => void;
  } = {},
): PauseBook {
  let pauses: ShippingPause[] = [];
  let failing = false;
  const readEnding = async () => {
    for (const ended of await endLapsedReleases(db)) opts.onLapsedRelease?.(ended);
    return pausesInForce(db);
  };
  const read = () =>
    readEnding().then(
      (now) => {
        pauses = now;
        failing = false;
        opts.onRead?.(now);
      },
      (err: unknown) => {
        if (!failing) opts.onReadFailed?.(err as Error);
        failing = true;
      },
    );
  const first = read();
  const timer = setInterval(() => void read(), opts.refreshMs ?? DEFAULT_PAUSE_REFRESH_MS);
  timer.unref();
  return {
    async pauseFor(tenantId) {
      await first;
      return pauseFor(pauses, tenantId);
    },
    stop: () => clearInterval(timer),
  };
}
