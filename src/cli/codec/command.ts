/** `fulfilment codec-server`: the payload codec for the Web UI and the temporal CLI, registered on the program by main.ts. */
import type { Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import { UsageError } from '../cli-errors.js';

export function registerCodecServerCommand(program: Command, run: Runner): void {
  program
    .command('codec-server')
    .description(
      'serve the payload codec the Temporal Web UI and `temporal --codec-endpoint` call (POST /decode, /encode) with the configured PAYLOAD_ENCRYPTION_KEYS, on CODEC_SERVER_HOST:CODEC_SERVER_PORT; every request needs Authorization: Bearer <CODEC_SERVER_TOKEN>; runs until interrupted',
    )
    .option(
      '--port <port>',
      'port to listen on (default CODEC_SERVER_PORT, 8888; 0: any free port)',
      arg.wholeNumber(0),
    )
    .action(async (flags: { port?: number }) => {
      if (flags.port !== undefined && flags.port > 65535)
        throw new UsageError(`--port: expected a port number 0–65535, got ${flags.port}`);
      await runCommand(run, { port: flags.port }, async () => (await import('./server.js')).codecServerCommand);
    });
}
