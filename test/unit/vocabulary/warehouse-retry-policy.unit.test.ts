/**
 * The warehouse retry policy is written once (src/vocabulary/warehouse-retry.ts): the workflow's activity options, the
 * configuration's defaults and the activity's own delays derive from it, and every figure the docs give of it agrees.
 * Change a number in the policy and this file names each place that still says the old one.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/base/config.js';
import { WAREHOUSE_RETRY } from '../../../src/vocabulary/warehouse-retry.js';
import { SHIPMENT_BACKOFF } from '../../../src/base/retry-policies.js';
import { WAREHOUSE_ACTIVITY } from '../../../workflows/activity-options.js';

const doc = (name: string) => readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');
/** Every match of `pattern` in `text`, as the numbers its groups captured. */
const figures = (text: string, pattern: RegExp) => [...text.matchAll(pattern)].map((m) => m.slice(1).map(Number));
const seconds = (ms: number) => ms / 1000;

describe('the warehouse retry policy, written once', () => {
  it('the activity options, the configuration defaults and the activity delays derive from it', () => {
    expect(WAREHOUSE_ACTIVITY.retry).toEqual({
      initialInterval: `${WAREHOUSE_RETRY.initialDelayMs} milliseconds`,
      backoffCoefficient: WAREHOUSE_RETRY.backoffCoefficient,
      maximumInterval: `${WAREHOUSE_RETRY.maxDelayMs} milliseconds`,
      maximumAttempts: WAREHOUSE_RETRY.attempts,
    });
    const config = loadConfig({});
    expect([config.WAREHOUSE_RETRY_INITIAL_MS, config.WAREHOUSE_RETRY_MAX_MS]).toEqual([
      WAREHOUSE_RETRY.initialDelayMs,
      WAREHOUSE_RETRY.maxDelayMs,
    ]);
    expect(SHIPMENT_BACKOFF).toEqual({
      initialDelayMs: WAREHOUSE_RETRY.initialDelayMs,
      maxDelayMs: WAREHOUSE_RETRY.maxDelayMs,
    });
  });

  it('every figure of it in the docs agrees', () => {
    const { initialDelayMs, maxDelayMs, attempts } = WAREHOUSE_RETRY;
    const configuration = doc('configuration.md');
    expect(figures(configuration, /\| `WAREHOUSE_RETRY_INITIAL_MS` \| `(\d+)` \|/g)).toEqual([[initialDelayMs]]);
    expect(figures(configuration, /\| `WAREHOUSE_RETRY_MAX_MS` \| `(\d+)` \| [^|]*?(\d+) attempts in all/g)).toEqual([
      [maxDelayMs, attempts],
    ]);
    expect(
      figures(doc('how-it-works.md'), /the warehouse (\d+) s doubling to (\d+) min[^,]*, (\d+) attempts/g),
    ).toEqual([[seconds(initialDelayMs), seconds(maxDelayMs) / 60, attempts]]);
    const operating = doc('operating.md');
    expect(figures(operating, /gave up after (\d+) attempts/g)).toEqual([[attempts]]);
    expect(
      figures(operating, /`WAREHOUSE_RETRY_INITIAL_MS` (\d+) s → `WAREHOUSE_RETRY_MAX_MS` (\d+) s, (\d+) attempts/g),
    ).toEqual([[seconds(initialDelayMs), seconds(maxDelayMs), attempts]]);
    expect(figures(doc('cli.md'), /gave up after its (\d+) attempts/g)).toEqual([[attempts]]);
  });
});
