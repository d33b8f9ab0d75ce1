/**
 * Where the local stack keeps things.
 * - repo root: found from this file's location, so the stack works from any clone.
 * - state dir (pid files, logs, service data): `<repo>/.stack`, or STACK_DIR.
 * - cache dir (built CLI, Maven-fetched jars): `~/.cache/fulfilment`, or FULFILMENT_CACHE_DIR. Lives outside the
 *   repo so a fresh clone on the same machine reuses it; everything in it is rebuilt when missing.
 */
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot: string = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.STACK_DIR?.trim();
  return v ? resolve(v) : join(repoRoot, '.stack');
}

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.FULFILMENT_CACHE_DIR?.trim();
  return v ? resolve(v) : join(homedir(), '.cache', 'fulfilment');
}

export const logsDir = (): string => join(stateDir(), 'logs');
export const pidFile = (service: string): string => join(stateDir(), `${service}.pid`);
export const serviceLog = (service: string): string => join(logsDir(), `${service}.log`);

/** Checked-in Maven manifests (dependency lists) for the Java parts of the stack. */
export const kafkaPom = (): string => join(repoRoot, 'tools', 'stack', 'maven', 'kafka', 'pom.xml');
export const testServerPom = (): string => join(repoRoot, 'tools', 'stack', 'maven', 'test-server', 'pom.xml');
