/**
 * A pass as people and scripts read it: a summary line per check, one line per mismatch (order, kind, where each side
 * stands), what could not be seen, and the verdict; or one JSON object (`--json`) with the same content. Pure.
 */
import { agrees, type CheckResult, type Mismatch } from './mismatch.js';
import type { PassReport } from './pass.js';

/** The JSON a pass prints with `--json`. */
export interface ReportJson {
  since: string;
  until: string;
  tenants: string[];
  tenantsFrom: PassReport['tenantsFrom'];
  agrees: boolean;
  checks: {
    check: string;
    compared: number;
    mismatches: Mismatch[];
    unseen: string[];
    notes: string[];
  }[];
}

export function reportJson(report: PassReport): ReportJson {
  return {
    since: report.since.toISOString(),
    until: report.until.toISOString(),
    tenants: report.tenants,
    tenantsFrom: report.tenantsFrom,
    agrees: agrees(report.results),
    checks: report.results.map((r) => ({
      check: r.check,
      compared: r.compared,
      mismatches: r.mismatches,
      unseen: r.unseen.map((u) => u.what),
      notes: r.notes,
    })),
  };
}

/** One mismatch on one line: `skipped t-1/o-7 at 0:12: orders topic: …; ledger: absent; …`. */
export function mismatchLine(m: Mismatch): string {
  const at = m.at ? ` at ${m.at}` : '';
  return `${m.kind} ${m.tenantId}/${m.orderId}${at}: ${m.sides.map((s) => `${s.source}: ${s.state}`).join('; ')}`;
}

function checkLines(r: CheckResult): string[] {
  const verdict =
    r.mismatches.length > 0
      ? `${r.mismatches.length} mismatch(es)`
      : r.unseen.length > 0
        ? 'could not see everything'
        : 'agrees';
  return [
    `${r.check}: ${r.compared} compared, ${verdict}`,
    ...r.mismatches.map((m) => `  ${mismatchLine(m)}`),
    ...r.unseen.map((u) => `  cannot see: ${u.what}`),
    ...r.notes.map((n) => `  note: ${n}`),
  ];
}

/** The human summary. */
export function reportLines(report: PassReport): string[] {
  const tenants =
    report.tenantsFrom === 'named'
      ? `tenants ${report.tenants.join(', ')}`
      : `${report.tenants.length} tenant(s) named by the window's records${report.tenants.length ? ` (${report.tenants.join(', ')})` : ''}`;
  const mismatches = report.results.reduce((n, r) => n + r.mismatches.length, 0);
  const unseen = report.results.reduce((n, r) => n + r.unseen.length, 0);
  return [
    `reconcile ${report.since.toISOString()} → ${report.until.toISOString()}, ${tenants}`,
    ...report.results.flatMap(checkLines),
    agrees(report.results)
      ? 'everything agrees'
      : `${mismatches} mismatch(es)${unseen ? `, ${unseen} part(s) not seen` : ''}`,
  ];
}
