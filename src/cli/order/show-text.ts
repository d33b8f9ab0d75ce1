/** `order show`'s text: the order's row, its workflow, its shipment, its dead letters — one section each. */
import { orderWorkflowId } from '../../../workflows/api.js';
import { REDACTED } from '../redact.js';
import { formatTable, truncate } from '../table.js';
import { PERSONAL_COLUMNS, type OrderShowResult } from './show-result.js';

/** What an operator does about an order the store holds for a person, by status. */
const NEEDS_PERSON: Record<string, (ref: string) => string> = {
  failed: (ref) =>
    `the warehouse gave up shipping it; once the cause is fixed: fulfilment order retry ${ref} --reason '…'`,
  'recall-failed': (ref) =>
    `it is cancelled, but the warehouse refused to recall its shipment; fulfilment order resolve ${ref} --action retry-recall|recalled-by-hand --reason '…'`,
};

/** `order show`'s text: the order's row, its workflow, its shipment, its dead letters — one section each. */
export function describe(r: OrderShowResult, namespace: string, dlqTopic: string): string[] {
  const lines = [
    `order ${r.tenantId}/${r.orderId}`,
    ...describeRow(r),
    ...describeWorkflow(r, namespace),
    ...describeShipment(r),
    ...describeDeadLetters(r, dlqTopic),
  ];
  if (!r.revealed && r.row && PERSONAL_COLUMNS.some((c) => r.row![c] === REDACTED))
    lines.push('', `personal data redacted (${PERSONAL_COLUMNS.join(', ')}); --reveal shows it`);
  return lines;
}

/** One `name value` line of a section; an absent value shows as `-`, an object as JSON. */
function field(name: string, value: unknown, width = 18): string {
  const shown =
    value === null || value === undefined || value === ''
      ? '-'
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);
  return `  ${name.padEnd(width)}${shown}`;
}

/** Whether a part could not be read (then it shows `(not read)`, not `none`). */
const notRead = (r: OrderShowResult, part: string) => r.problems.some((p) => p.startsWith(part));

function describeRow(r: OrderShowResult): string[] {
  const lines = ['', `row (fulfilments, as the runtime role with app.tenant_id = '${r.tenantId}')`];
  if (!r.row) return [...lines, notRead(r, 'row') ? '  (not read)' : '  none: the tenant has no row for this order'];
  const columns = Object.entries(r.row).filter(([k]) => k !== 'tenant_id' && k !== 'order_id');
  const width = Math.max(18, ...columns.map(([k]) => k.length + 2));
  for (const [k, v] of columns) lines.push(field(k, v, width));
  const action = NEEDS_PERSON[String(r.row.status)];
  if (action) lines.push(`  → needs a person: ${action(`${r.tenantId}/${r.orderId}`)}`);
  if (r.row.status === 'pending' && r.row.waiting_since)
    lines.push(
      '  → waits for the warehouse: it resumes by itself once the warehouse answers (a pause: `fulfilment shipping status`)',
    );
  return lines;
}

function describeWorkflow(r: OrderShowResult, namespace: string): string[] {
  const lines = ['', `workflow ${orderWorkflowId(r.tenantId, r.orderId)} (namespace ${namespace})`];
  const w = r.workflow;
  if (!w)
    return [
      ...lines,
      notRead(r, 'workflow (')
        ? '  (not read)'
        : '  none: no run of it in the namespace (never started, or closed longer ago than its retention)',
    ];
  lines.push(
    field('run', `${w.runId} ${w.running ? 'running' : `closed ${w.status.toLowerCase()} at ${w.closeTime}`}`),
    field('started', w.startTime),
    field('task queue', w.taskQueue),
    field('history', `${w.historyLength} events`),
    field(
      'order status',
      w.view
        ? `${w.view.status} (search attribute: ${w.orderStatus ?? '-'})`
        : `${w.orderStatus ?? '-'} (search attribute; the status query was not answered)`,
    ),
  );
  const v = w.view;
  if (!v) return lines;
  lines.push(
    field('version', v.orderVersion),
    field(
      'events',
      `${v.appliedEvents} applied, ${v.duplicatesSuppressed} duplicates suppressed, ${v.staleIgnored} stale ignored`,
    ),
  );
  if (v.waitingSince)
    lines.push(field('waiting', `for the warehouse since ${v.waitingSince}: ${v.waitingReason ?? '-'}`));
  if (v.failureReason) lines.push(field('failure', v.failureReason));
  if (v.retries) lines.push(field('retries', v.retries));
  if (v.recallFailures) lines.push(field('recall refusals', v.recallFailures));
  lines.push(`  notes${v.notes.length === 0 ? '             -' : ''}`);
  for (const note of v.notes) lines.push(`    - ${note}`);
  return lines;
}

function describeShipment(r: OrderShowResult): string[] {
  const wh = r.shipment.warehouse;
  const atWarehouse =
    wh === undefined
      ? '(not read)'
      : wh === null
        ? 'nothing under this key'
        : wh.id === ''
          ? `key burned by a recall at ${wh.cancelledAt ?? wh.createdAt}: nothing shipped, nothing ever will under it`
          : `${wh.id} ${wh.status}, created ${wh.createdAt}${wh.cancelledAt ? `, cancelled ${wh.cancelledAt}` : ''}`;
  return [
    '',
    `shipment ${r.shipment.key}`,
    field('id (row)', r.shipment.rowShipmentId),
    field('id (workflow)', r.shipment.workflowShipmentId),
    field('warehouse', atWarehouse),
  ];
}

function describeDeadLetters(r: OrderShowResult, dlqTopic: string): string[] {
  const lines = ['', `dead letters (${dlqTopic})`];
  if (r.deadLetters.length === 0) return [...lines, notRead(r, 'dead letters') ? '  (not read)' : '  none'];
  const rows = r.deadLetters.map((d) => [
    d.position,
    String(d.copies),
    d.failedAt,
    d.errorClass ?? '-',
    d.eventId ?? '-',
    truncate(d.errorMessage ?? '-', 60),
  ]);
  for (const line of formatTable(['POSITION', 'COPIES', 'FAILED AT', 'ERROR CLASS', 'EVENT ID', 'ERROR'], rows))
    lines.push(`  ${line}`);
  lines.push(`  (dlq show <position> for one in full)`);
  return lines;
}
