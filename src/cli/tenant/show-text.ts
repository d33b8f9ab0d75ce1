/** The text `tenant show` prints: a table of the figures, each with where it comes from; then the tenants competing. */
import type { ShippingPause } from '../../adapters/store/shipment-waits.js';
import { formatDuration } from '../progress.js';
import { formatTable } from '../table.js';
import type { TenantShowResult } from './show-result.js';

/** How many competing tenants the text names; --json lists them all. */
const TENANTS_NAMED = 10;

const percent = (share: number) => `${(share * 100).toFixed(1).replace(/\.0$/, '')}%`;
const num = (n: number) => String(Number(n.toFixed(3)));
const iso = (d: Date | string) => new Date(d).toISOString().replace(/\.\d+Z$/, 'Z');

function shareRow(r: TenantShowResult): string[] {
  const s = r.share;
  if (!s) return ['share', '?', 'Temporal could not be read'];
  const others = s.competing.length - 1;
  const of = `${num(s.weight)} of ${num(s.totalWeight)}${s.moreTenants ? ' or more' : ''}`;
  const value = s.hasWork
    ? `${percent(s.share)}${s.moreTenants ? ' at most' : ''} (${of})`
    : `none now; ${percent(s.share)}${s.moreTenants ? ' at most' : ''} (${of}) once it has work`;
  return [
    'share',
    value,
    `its weight over its own and the ${others}${s.moreTenants ? '+' : ''} other tenant(s) with open runs`,
  ];
}

function backlogRows(r: TenantShowResult): string[][] {
  const b = r.backlog;
  const from = 'PostgreSQL, its rows';
  if (!b) return [['backlog', '?', 'PostgreSQL could not be read']];
  const forPause = b.waitingForPause > 0 ? ` (${b.waitingForPause} for a pause)` : '';
  const oldest = b.oldestSince
    ? `${formatDuration(b.oldestAgeSeconds)} (placed ${iso(b.oldestSince)})`
    : 'none: every order settled';
  return [
    ['orders', String(b.orders), `${from}: every status`],
    ['pending', String(b.pending), `${from}: placed, not shipped, not waiting`],
    ['waiting', `${b.waiting}${forPause}`, `${from}: pending, waiting for the warehouse or a pause`],
    ['failed', String(b.failed), `${from}: held as failed (order retry)`],
    ['recall-failed', String(b.recallFailed), `${from}: held for a person (order resolve)`],
    ['oldest', oldest, `${from}: the oldest not settled`],
  ];
}

function pauseText(p: ShippingPause | null, known: boolean): string {
  if (!known) return '?';
  if (!p) return 'not paused';
  const scope = p.tenantId ? 'paused for it' : 'paused for every tenant';
  const resuming = p.releasingAt ? ` (being resumed since ${iso(p.releasingAt)})` : '';
  return `${scope} by ${p.pausedBy} at ${iso(p.pausedAt)}: ${p.reason}${resuming}`;
}

/** The tenants with work the line does not name: `rest` listed, and more not looked for past MAX_TENANTS_FOUND. */
function unnamed(rest: number, more = false): string {
  if (rest > 0) return `, and ${rest}${more ? '+' : ''} more`;
  return more ? ', and more' : '';
}

export function describeTenant(r: TenantShowResult): string[] {
  const rows = [
    ['weight', num(r.weight), r.weightFrom],
    shareRow(r),
    [
      'open runs',
      r.openRuns === null ? '?' : String(r.openRuns),
      'Temporal: open order runs on the task queue with its TenantId',
    ],
    ...backlogRows(r),
    ['shipping', pauseText(r.pause, r.pauseKnown), 'shipping_pauses in force'],
  ];
  const lines = [
    `tenant ${r.tenantId} (namespace ${r.namespace}, task queue ${r.taskQueue})`,
    ...formatTable(['FIGURE', 'VALUE', 'FROM'], rows),
  ];
  const competing = r.share?.competing.slice(1) ?? [];
  if (competing.length > 0) {
    const named = competing.slice(0, TENANTS_NAMED).map((c) => `${c.tenantId} (${num(c.weight)})`);
    const rest = competing.length - named.length;
    lines.push(`other tenants with open runs (weight): ${named.join(', ')}${unnamed(rest, r.share?.moreTenants)}`);
  }
  return lines;
}
