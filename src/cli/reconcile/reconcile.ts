/**
 * `fulfilment reconcile`: one pass (src/reconcile/pass.ts) over the window, printed as a summary or JSON; with
 * `--repair`, the plan of the repairs (repair.ts), carried out with `--yes`. Exit 0 when everything agrees and was
 * seen, 1 otherwise (ReconcileDisagreement).
 */
import { runtimeConnection } from '../../adapters/store/connection.js';
import { createDb } from '../../adapters/store/db.js';
import { reconcilePass, type PassReport } from '../../reconcile/pass.js';
import { agrees } from '../../reconcile/mismatch.js';
import { reportJson, reportLines } from '../../reconcile/report.js';
import type { CliContext } from '../context.js';
import { cliKafka } from '../kafka.js';
import { println } from '../output.js';
import { cliTemporalClient } from '../temporal-client.js';
import { checkReconcileOptions, type ReconcileOptions } from './options.js';

/** The pass found mismatches or could not see everything: exit 1, the report already printed. */
export class ReconcileDisagreement extends Error {
  override name = 'ReconcileDisagreement';
}

export async function reconcile(ctx: CliContext, opts: ReconcileOptions): Promise<PassReport> {
  checkReconcileOptions(opts);
  const { config } = ctx;
  const db = createDb(runtimeConnection(config), 2);
  const client = await cliTemporalClient(config);
  try {
    const kafka = cliKafka(ctx);
    const report = await reconcilePass({ config, kafka, db, client, signal: ctx.signal }, opts);
    if (opts.json) println(ctx.out, JSON.stringify(reportJson(report)));
    else for (const line of reportLines(report)) println(ctx.out, line);
    if (opts.repair) {
      const { repairAll } = await import('./repair.js');
      await repairAll({ ...ctx, db, client, kafka }, report, opts);
    }
    if (!agrees(report.results)) {
      const n = report.results.reduce((sum, r) => sum + r.mismatches.length, 0);
      throw new ReconcileDisagreement(
        n > 0 ? `${n} mismatch(es) found` : 'some of the window could not be seen (see "cannot see")',
      );
    }
    return report;
  } finally {
    await client.connection.close().catch(() => undefined);
    await db.end().catch(() => undefined);
  }
}
