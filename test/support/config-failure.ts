/** For the configuration's unit tests: the ConfigError message an environment is refused with. */
import { expect } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

/** The message loadConfig refuses `env` with; fails the test when it accepts it or throws anything else. */
export function configFailure(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}
