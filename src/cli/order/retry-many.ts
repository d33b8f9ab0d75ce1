/**
 * `fulfilment order retry --tenant <t> --status failed [--since <time>] [--limit N] [--rate R] [--dry-run]`: the bulk
 * retry. Selects the tenant's orders the store holds as failed since the time (oldest first, at most --limit), lists
 * them, and — unless --dry-run — retries each as `order retry` does (retry.ts: its open run, or a repair run), at most
 * --rate orders a second, with one reason and who asked for all. Every order gets its own line (or JSON object) with
 * what happened; one that is refused or fails does not stop the rest, and the command exits 1 if any did.
 */
import type { CliContext } from '../context.js';
import { InterruptedError } from '../cli-errors.js';
import { println } from '../output.js';
import { formatTable, truncate } from '../table.js';
import { cliTemporalClient } from '../temporal-client.js';
import { TokenBucket } from '../token-bucket.js';
import { readOrderRow, selectHeldOrders, withStore, type HeldOrder } from './held-orders.js';
import { answerWithin } from './operator-update.js';
import {
  checkBulkRetryOptions,
  defaultOperator,
  DEFAULT_RETRY_TIMEOUT_SECONDS,
  type BulkRetryOptions,
} from './options.js';
import { describeRetry, retryHeldOrder, type RetrySummary } from './retry.js';

/** One selected order and what the bulk retry did with it. */
export interface BulkRetryLine {
  tenantId: string;
  orderId: string;
  heldSince: string;
  failureReason: string | null;
  /** `listed` in a dry run; `retried` / `already-applied` as `order retry` says; `skipped` when the store no longer
   *  holds it as failed; `refused` / `error` with the message. */
  outcome: 'listed' | RetrySummary['outcome'] | 'skipped' | 'refused' | 'error';
  detail?: string;
  summary?: RetrySummary;
}

export interface BulkRetryReport {
  tenantId: string;
  status: 'failed';
  since: string | null;
  dryRun: boolean;
  selected: number;
  lines: BulkRetryLine[];
}

/** Thrown at the end when some orders were refused or failed: the report was printed, the exit code is 1. */
export class BulkRetryIncompleteError extends Error {
  override name = 'BulkRetryIncompleteError';
}

export async function orderRetryMany(ctx: CliContext, opts: BulkRetryOptions): Promise<BulkRetryReport> {
  checkBulkRetryOptions(opts);
  const by = opts.by ?? defaultOperator();
  const report: BulkRetryReport = {
    tenantId: opts.tenantId,
    status: opts.status,
    since: opts.since?.toISOString() ?? null,
    dryRun: opts.dryRun === true,
    selected: 0,
    lines: [],
  };
  await withStore(ctx, async (db) => {
    const held = await selectHeldOrders(db, {
      tenantId: opts.tenantId,
      status: opts.status,
      ...(opts.since ? { since: opts.since } : {}),
      limit: opts.limit,
    });
    report.selected = held.length;
    if (!opts.json) printSelection(ctx, opts, held);
    if (opts.dryRun) {
      report.lines = held.map((h) => ({ ...lineOf(h), outcome: 'listed' }));
      return;
    }
    if (held.length === 0) return;
    const client = await cliTemporalClient(ctx.config);
    try {
      const within = answerWithin(ctx, client, (opts.timeoutSeconds ?? DEFAULT_RETRY_TIMEOUT_SECONDS) * 1000);
      const bucket = TokenBucket.perSecond(opts.rate);
      for (const h of held) {
        if (ctx.signal?.aborted)
          throw new InterruptedError(`interrupted after ${report.lines.length} of ${held.length} orders`);
        await bucket.take();
        const line: BulkRetryLine = lineOf(h);
        try {
          // The store decides again, order by order: one retried or cancelled since the selection is skipped.
          const row = await readOrderRow(db, h.tenantId, h.orderId);
          if (row?.status !== 'failed') {
            Object.assign(line, {
              outcome: 'skipped',
              detail: `the store holds it as ${row?.status ?? 'nothing'} now`,
            });
          } else {
            const summary = await within(
              `from the workflow of ${h.tenantId}/${h.orderId} to the retryShipment update`,
              () => retryHeldOrder(client, ctx.config, row, { reason: opts.reason, by }),
            );
            Object.assign(line, { outcome: summary.outcome, summary });
          }
        } catch (err) {
          const refused = (err as Error).name === 'OperatorRequestRefusedError';
          Object.assign(line, { outcome: refused ? 'refused' : 'error', detail: (err as Error).message });
        }
        report.lines.push(line);
        if (!opts.json) printLine(ctx, line);
      }
    } finally {
      await client.connection.close().catch(() => undefined);
    }
  });
  if (opts.json) println(ctx.out, JSON.stringify(report));
  else println(ctx.out, totals(report));
  const failed = report.lines.filter((l) => l.outcome === 'refused' || l.outcome === 'error').length;
  if (failed > 0)
    throw new BulkRetryIncompleteError(`${failed} of ${report.selected} orders were not retried (see above)`);
  return report;
}

function lineOf(h: HeldOrder): BulkRetryLine {
  return {
    tenantId: h.tenantId,
    orderId: h.orderId,
    heldSince: h.heldSince.toISOString(),
    failureReason: h.failureReason,
    outcome: 'listed',
  };
}

function printSelection(ctx: CliContext, opts: BulkRetryOptions, held: HeldOrder[]): void {
  const since = opts.since ? ` since ${opts.since.toISOString()}` : '';
  println(
    ctx.out,
    `${held.length} order(s) of tenant ${opts.tenantId} held as ${opts.status}${since}${held.length === opts.limit ? ` (the first ${opts.limit}: --limit)` : ''}${opts.dryRun ? ' — dry run, nothing changed' : ''}:`,
  );
  if (held.length === 0) return;
  const rows = held.map((h) => [
    `${h.tenantId}/${h.orderId}`,
    h.heldSince.toISOString(),
    String(h.retryCount),
    truncate(h.failureReason ?? '-', 80),
  ]);
  for (const line of formatTable(['order', 'held since', 'retries', 'failure'], rows)) println(ctx.out, line);
}

function printLine(ctx: CliContext, line: BulkRetryLine): void {
  if (line.summary) println(ctx.out, describeRetry(line.summary)[0]!);
  else println(ctx.out, `${line.outcome} ${line.tenantId}/${line.orderId}: ${line.detail ?? ''}`);
}

function totals(r: BulkRetryReport): string {
  if (r.dryRun) return `dry run: ${r.selected} order(s) would be retried; run again without --dry-run to retry them`;
  const count = (o: BulkRetryLine['outcome']) => r.lines.filter((l) => l.outcome === o).length;
  return `retried ${count('retried')}, already applied ${count('already-applied')}, skipped ${count('skipped')}, refused ${count('refused')}, failed ${count('error')} of ${r.selected}`;
}
