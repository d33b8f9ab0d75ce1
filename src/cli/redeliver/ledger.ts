/**
 * Read-only look-ups in the dedupe ledger (`processed_events`), for reporting only: a redelivery counts how many
 * of the events it delivers were already applied. The decision itself stays downstream — the workflow and the
 * claim-then-effect activities — so a stale answer here can mislabel a count, never double-apply an event.
 */
import { CONSUMER_NAME } from '../../vocabulary/order.js';
import type { Config } from '../../base/config.js';
import { runtimeConnection } from '../../adapters/store/connection.js';
import { createDb, inTenantTransaction, type Db } from '../../adapters/store/db.js';
import { checkRuntimeRole } from '../../adapters/store/runtime-role.js';

export interface Ledger {
  /**
   * Refuses (PermanentStartupError) a role row-level security does not bind, as the worker does; other failures
   * (PostgreSQL down) reject as they are.
   */
  checkRole(): Promise<void>;
  /** Whether `eventId` was claimed for `tenantId` (row-level security scopes the look-up to the tenant). */
  alreadyProcessed(tenantId: string, eventId: string): Promise<boolean>;
  close(): Promise<void>;
  /** The ledger's pool, as the runtime role: the redelivery's late path records through it (src/roles/bridge/late-events.ts). */
  readonly db: Db;
}

export function createLedger(config: Config): Ledger {
  const db = createDb(runtimeConnection(config), 2);
  return {
    db,
    checkRole: async () => void (await checkRuntimeRole(db)),
    alreadyProcessed: (tenantId, eventId) =>
      inTenantTransaction(db, tenantId, async (tx) => {
        const res = await tx.query('SELECT 1 FROM processed_events WHERE consumer = $1 AND event_id = $2', [
          CONSUMER_NAME,
          eventId,
        ]);
        return (res.rowCount ?? 0) > 0;
      }),
    close: () => db.end(),
  };
}
