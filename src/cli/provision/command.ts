/** `fulfilment provision`: what the service needs and never creates itself, registered on the program by main.ts. */
import type { Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import { PROVISION_STEPS, type ProvisionStep } from '../../roles/provision/steps.js';
import * as arg from '../options.js';

export function registerProvisionCommand(program: Command, run: Runner): void {
  program
    .command('provision')
    .description(
      "create what the service needs and never creates itself: Kafka topics (ORDERS_TOPIC, DLQ_TOPIC, STATUS_TOPIC), Temporal search attributes, the PostgreSQL schema (as DATABASE_MIGRATION_URL) and the runtime role's grants; changes only what is missing",
    )
    .option(
      '--only <steps>',
      `comma-separated steps to run (default all): ${PROVISION_STEPS.join(', ')}`,
      arg.provisionSteps,
    )
    .option('--json', 'print what was done as one JSON object')
    .action(async (flags: { only?: ProvisionStep[]; json?: boolean }) => {
      await runCommand(
        run,
        { steps: flags.only ?? [...PROVISION_STEPS], json: flags.json },
        async () => (await import('./provision.js')).provisionCommand,
      );
    });
}
