/**
 * A pause being resumed by `fulfilment shipping resume --rate` (migration 011_pause_release_lease.sql): the command
 * holds the release as a lease it renews each round, and a release whose lease ran out — the command killed, or
 * stopped and not run again — is ended by whoever reads the pauses next (each worker every 2 s, and the CLI), so that
 * the workers' resumers wake the orders it still held. Every time is the store's clock.
 */
import type { Db } from './db.js';

/** Who a lapsed release's end is recorded as (shipping_pauses.resumed_by). */
export const LAPSED_RELEASE_BY = 'fulfilment (shipping resume --rate stopped)';

/**
 * Marks the pause `pauseId` being resumed (since now, unless it already was) until `leaseSeconds` from now; undefined
 * when the pause is no longer in force (ended meanwhile: by someone, or because an earlier lease ran out).
 */
export async function holdRelease(
  db: Pick<Db, 'query'>,
  pauseId: string,
  leaseSeconds: number,
): Promise<Date | undefined> {
  const res = await db.query<{ releasing_until: Date }>(
    `UPDATE shipping_pauses
        SET releasing_at = COALESCE(releasing_at, now()), releasing_until = now() + make_interval(secs => $2)
      WHERE id = $1 AND resumed_at IS NULL
      RETURNING releasing_until`,
    [pauseId, leaseSeconds],
  );
  return res.rows[0]?.releasing_until;
}

/** A pause ended because its release's lease ran out. */
export interface LapsedRelease {
  id: string;
  tenantId: string | undefined;
  releasingUntil: Date;
}

/** Ends every pause being resumed whose lease ran out, recording why; returns them (none, nearly always). */
export async function endLapsedReleases(db: Pick<Db, 'query'>): Promise<LapsedRelease[]> {
  const res = await db.query<{ id: string; tenant_id: string | null; releasing_until: Date }>(
    `UPDATE shipping_pauses
        SET resumed_at = now(), resumed_by = $1,
            resume_reason = 'its resume (--rate) stopped before ending it: the lease it held ran out at '
              || to_char(releasing_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
              || '; the workers'' resumers wake what it still held'
      WHERE resumed_at IS NULL AND releasing_until < now()
      RETURNING id, tenant_id, releasing_until`,
    [LAPSED_RELEASE_BY],
  );
  return res.rows.map((r) => ({
    id: String(r.id),
    tenantId: r.tenant_id ?? undefined,
    releasingUntil: r.releasing_until,
  }));
}
