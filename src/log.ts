/**
 * Structured logging (pino). Every processing attempt logs eventId, type, orderVersion, attempt and correlationId.
 * LOG_FORMAT says how lines are written: `json` (one JSON object a line, for collectors), `pretty` (readable lines
 * through pino-pretty), or `auto`, the default: pretty on a terminal, JSON anywhere else (a container, a pipe, a file).
 */
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import type { PrettyOptions, PrettyStream } from 'pino-pretty';

export type { Logger };

export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', name = 'fulfilment', format: string = process.env.LOG_FORMAT ?? 'auto'): Logger {
  const options = { name, level, base: { pid: process.pid } };
  if (format !== 'pretty' && !(format === 'auto' && process.stdout.isTTY === true)) return pino(options);
  // Loaded only here: a process that writes JSON never loads the pretty-printer.
  const pretty = createRequire(import.meta.url)('pino-pretty') as (o: PrettyOptions) => PrettyStream;
  // Written synchronously in this thread: the last lines before an exit are never lost.
  return pino(options, pretty({ colorize: process.stdout.isTTY === true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
}
