/**
 * What every command runs with: the validated configuration (src/base/config.ts, the one config module), where to
 * write, and a logger for the clients' own diagnostics. Commands take a context instead of reading the
 * environment, so tests point them at a scenario's private topics.
 */
import { destination, pino } from 'pino';
import type { Config } from '../base/config.js';
import type { Logger } from '../base/log.js';
import type { Output } from './output.js';

export interface CliContext {
  config: Config;
  out: Output;
  /** Client diagnostics (kafkajs); silent unless `--log-level` asks. Always stderr: stdout carries results. */
  logger?: Logger;
  /** Aborted on SIGINT: long-running commands finish the record in hand, keep their progress and stop. */
  signal?: AbortSignal;
}

/** A logger that writes JSON lines to stderr at `level`. */
export function cliLogger(level = 'silent'): Logger {
  return pino({ name: 'fulfilment-cli', level }, destination({ dest: 2, sync: true }));
}
