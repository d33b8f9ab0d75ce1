/**
 * The warehouse's shipments of one tenant, for the shipments check: `GET /shipments?tenantId=` (the local warehouse,
 * tools/warehouse, lists them so), narrowed by `createdFrom=` (those created at or after a time) or `key=` (the one
 * under a key). A warehouse that ignores the narrowing answers more: the check filters what it compares itself. A warehouse without that read API (404, 405, 501) cannot be compared: the answer
 * says so, and the check reports it as unseen — it never passes it.
 */
import type { WarehouseShipment } from './shipments.js';

export type WarehouseListing = { ok: true; shipments: WarehouseShipment[] } | { ok: false; why: string };

/** Answers that mean the warehouse has no such read API. */
const NO_READ_API = new Set([404, 405, 501]);

export async function listShipments(
  baseUrl: string,
  tenantId: string,
  timeoutMs: number,
  narrow: { createdFrom?: Date; key?: string } = {},
): Promise<WarehouseListing> {
  const url = new URL('/shipments', baseUrl);
  url.searchParams.set('tenantId', tenantId);
  if (narrow.createdFrom) url.searchParams.set('createdFrom', narrow.createdFrom.toISOString());
  if (narrow.key) url.searchParams.set('key', narrow.key);
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (NO_READ_API.has(res.status))
    return { ok: false, why: `the warehouse has no read API (GET ${url.pathname}?tenantId= answered ${res.status})` };
  if (!res.ok) throw new Error(`warehouse at ${baseUrl}: GET ${url.pathname}?tenantId= answered ${res.status}`);
  const body = (await res.json()) as unknown;
  if (!Array.isArray(body))
    return { ok: false, why: `the warehouse's GET ${url.pathname}?tenantId= answered something other than a list` };
  return {
    ok: true,
    shipments: body
      .filter((s): s is Record<string, unknown> => s !== null && typeof s === 'object')
      .map((s) => ({
        id: typeof s.id === 'string' ? s.id : '',
        key: typeof s.key === 'string' ? s.key : '',
        tenantId: typeof s.tenantId === 'string' ? s.tenantId : tenantId,
        orderId: typeof s.orderId === 'string' ? s.orderId : '',
        lines: s.lines,
        status: typeof s.status === 'string' ? s.status : 'unknown',
        createdAt: typeof s.createdAt === 'string' ? s.createdAt : '',
      })),
  };
}
