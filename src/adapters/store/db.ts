/**
 * Connection pool and the tenant-scoped transaction every query of the service runs in. The tenant comes
 * from the event and is set as app.tenant_id, which the row-level security policies check: a transaction
 * for tenant A cannot see or write tenant B's rows whatever its SQL says.
 */
import pg from 'pg';

export type Db = pg.Pool;
export type Tx = pg.PoolClient;

/** A pool on `connection` (see runtimeConnection in connection.ts: the service connects as its runtime role). */
export function createDb(connection: pg.ClientConfig, max = 10): Db {
  const pool = new pg.Pool({ ...connection, max });
  // An idle client losing its connection (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `work` in one transaction scoped to `tenantId`; commits if it resolves, rolls back if it throws. */
export async function inTenantTransaction<T>(db: Db, tenantId: string, work: (tx: Tx) => Promise<T>): Promise<T> {
  const tx = await db.connect();
  // A checked-out client whose server goes away (restart, admin shutdown) emits 'error' as well as failing its
  // query; the failed query is what this function reports, so the event must not become an uncaught error.
  const ignore = () => undefined;
  tx.on('error', ignore);
  try {
    await tx.query('BEGIN');
    await tx.query("SELECT set_config('app.tenant_id', $1, true)", [tenantId]);
    const result = await work(tx);
    await tx.query('COMMIT');
    return result;
  } catch (err) {
    await tx.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    tx.off('error', ignore);
    tx.release();
  }
}
