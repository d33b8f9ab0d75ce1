/**
 * What an operator does to a scenario in tests: run the CLI against its configuration (the command's real output is
 * printed, as docs/cli.md quotes it) and set the in-process warehouse's faults.
 */
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import type { Scenario } from './harness.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** A runner of `fulfilment <argv>` with `s`'s configuration; each run's command line and output are printed. */
export function cliOf(s: Pick<Scenario, 'config'>): (...argv: string[]) => Promise<CliRun> {
  return async (...argv) => {
    const out = memoryOutput();
    const code = await runCli(argv, { out, config: s.config });
    console.log(
      `$ npx fulfilment ${argv.map((a) => (/[\s"|]/.test(a) ? `'${a}'` : a)).join(' ')}\n${out.stdout}${out.stderr}(exit ${code})`,
    );
    return { code, stdout: out.stdout, stderr: out.stderr };
  };
}

/** Sets the in-process warehouse's faults (POST /admin/faults; fields not given stay as they are). */
export function faultsOf(s: Pick<Scenario, 'warehouse'>): (body: object) => Promise<Response> {
  return (body) => fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
}
