/**
 * Structured logging (pino). Every processing attempt logs eventId, type, orderVersion, attempt and correlationId.
 * LOG_FORMAT says how lines are written: `json` (one JSON object a line, for collectors), `pretty` (readable lines
 * through pino-pretty), or `auto`, the default: pretty on a terminal, JSON anywhere else (a container, a pipe, a file).
 */
import { createRequire } from 'node:module';
import { destination, pino, type Logger } from 'pino';
import type { PrettyOptions, PrettyStream } from 'pino-pretty';

export type { Logger };

export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

export function createLogger(
  level: string = process.env.LOG_LEVEL ?? 'info',
  name = 'fulfilment',
  format: string = process.env.LOG_FORMAT ?? 'auto',
): Logger {
  const options = { name, level, base: { pid: process.pid } };
  // JSON lines are written synchronously too: with pino's default asynchronous stdout, a pipe that is slow to drain
  // (a loaded machine, a busy collector) could put a fatal line (pino flushes those at once) after lines logged
  // before it, or lose the last lines before an exit.
  if (format !== 'pretty' && !(format === 'auto' && process.stdout.isTTY === true))
    return pino(options, destination({ dest: 1, sync: true }));
  // Loaded only here: a process that writes JSON never loads the pretty-printer.
  const pretty = createRequire(import.meta.url)('pino-pretty') as (o: PrettyOptions) => PrettyStream;
  // Written synchronously in this thread: the last lines before an exit are never lost.
  return pino(
    options,
    pretty({
      colorize: process.stdout.isTTY === true,
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    }),
  );
}
