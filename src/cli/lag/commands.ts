/** `fulfilment lag` and `lag-exporter`: how far behind each group is, registered on the program by main.ts. */
import type { Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';

export function registerLagCommands(program: Command, run: Runner): void {
  const groupList = (value: string, previous: string[] = []) => [
    ...previous,
    ...value.split(',').map((g) => arg.name(g)),
  ];

  /** What both commands read: which groups, of which topic. */
  const groupsAndTopic = (cmd: Command) =>
    cmd
      .option('--group <name>', 'consumer group (repeatable, or comma-separated; default CONSUMER_GROUP)', groupList)
      .option('--topic <name>', 'topic (default ORDERS_TOPIC)', arg.name);

  groupsAndTopic(program.command('lag'))
    .description(
      'per consumer group and partition: committed offset, end offset, records behind and the age of the oldest record not yet committed, read from the brokers (no bridge needs to run)',
    )
    .option('--json', 'print one JSON object: {at, topic, groups, partitions: [...]}')
    .action(async (flags: { group?: string[]; topic?: string; json?: boolean }) => {
      await runCommand(
        run,
        { groups: flags.group, topic: flags.topic, json: flags.json },
        async () => (await import('./lag.js')).lag,
      );
    });

  groupsAndTopic(program.command('lag-exporter'))
    .description(
      'serve the same lag as Prometheus metrics on LAG_EXPORTER_PORT (/metrics, /livez, /readyz), polling every LAG_EXPORTER_INTERVAL_MS, until SIGINT/SIGTERM',
    )
    .action(async (flags: { group?: string[]; topic?: string }) => {
      await runCommand(
        run,
        { groups: flags.group, topic: flags.topic },
        async () => (await import('./lag.js')).lagExporter,
      );
    });
}
