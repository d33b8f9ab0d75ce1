/** Structured JSON logging (pino). Every processing attempt logs eventId, type, orderVersion, attempt and correlationId. */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', name = 'fulfilment'): Logger {
  return pino({ name, level, base: { pid: process.pid } });
}
