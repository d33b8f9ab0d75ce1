/** Configuration helper for unit tests: the ConfigError message an environment is refused with. */
import { expect } from 'vitest';
import { ConfigError, loadConfig } from '../../src/base/config.js';

/** The message loadConfig refuses `env` with; fails the test when it is accepted or throws anything but a ConfigError. */
export function configFailure(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}
