/**
 * `fulfilment provision [--only kafka,temporal,postgres] [--json]`: creates what the service needs and never creates
 * itself (src/roles/provision/). Idempotent: a second run reports that nothing changed.
 */
import {
  describeReport,
  nothingChanged,
  provision,
  type ProvisionReport,
  type ProvisionStep,
} from '../../roles/provision/index.js';
import { cliLogger, type CliContext } from '../context.js';
import { println } from '../output.js';

export interface ProvisionOptions {
  steps: ProvisionStep[];
  json?: boolean;
}

export async function provisionCommand(ctx: CliContext, opts: ProvisionOptions): Promise<ProvisionReport> {
  const report = await provision(ctx.config, ctx.logger ?? cliLogger(), opts.steps);
  if (opts.json) println(ctx.out, JSON.stringify({ ...report, changed: !nothingChanged(report) }));
  else {
    for (const line of describeReport(report, ctx.config)) println(ctx.out, line);
    println(ctx.out, nothingChanged(report) ? 'provisioned: nothing to change' : 'provisioned');
  }
  return report;
}
