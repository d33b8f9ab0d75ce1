/** A consumer group's ordinary churn is logged at info, not as the errors kafkajs calls it; real trouble keeps its level. */
import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkajsLogLevel } from '../../../../src/adapters/kafka/log-levels.js';

const entry = (level: logLevel, message: string, error?: string) => ({
  level,
  log: { message, ...(error ? { error } : {}), timestamp: '', logger: 'kafkajs' },
});

describe('kafkajs log levels', () => {
  it('a rebalance, a forgotten member or a moving coordinator is info, whatever kafkajs called it', () => {
    expect(
      kafkajsLogLevel(
        entry(
          logLevel.ERROR,
          'Response Heartbeat(key: 12, version: 3)',
          'The group is rebalancing, so a rejoin is needed',
        ),
      ),
    ).toBe('info');
    expect(kafkajsLogLevel(entry(logLevel.WARN, 'The group is rebalancing, re-joining'))).toBe('info');
    expect(
      kafkajsLogLevel(entry(logLevel.ERROR, 'The coordinator is not aware of this member, re-joining the group')),
    ).toBe('info');
    expect(
      kafkajsLogLevel(
        entry(
          logLevel.ERROR,
          'Response OffsetCommit(key: 8, version: 5)',
          'The specified group generation id is not valid',
        ),
      ),
    ).toBe('info');
    expect(
      kafkajsLogLevel(
        entry(
          logLevel.ERROR,
          'Response FindCoordinator(key: 10, version: 2)',
          'This is not the correct coordinator for this group',
        ),
      ),
    ).toBe('info');
  });

  it("an idempotent producer's warning about its capped retries is info: the cap is deliberate", () => {
    expect(
      kafkajsLogLevel(
        entry(logLevel.WARN, 'Limiting retries for the idempotent producer may invalidate EoS guarantees'),
      ),
    ).toBe('info');
  });

  it('anything else keeps its level; kafkajs info and debug stay at debug', () => {
    expect(kafkajsLogLevel(entry(logLevel.ERROR, 'Connection error: connect ECONNREFUSED 127.0.0.1:19092'))).toBe(
      'error',
    );
    expect(
      kafkajsLogLevel(
        entry(
          logLevel.ERROR,
          'Response Produce(key: 0, version: 7)',
          'The request included a message larger than the max message size the server will accept',
        ),
      ),
    ).toBe('error');
    expect(kafkajsLogLevel(entry(logLevel.WARN, 'Response without match'))).toBe('warn');
    expect(kafkajsLogLevel(entry(logLevel.INFO, 'Consumer has joined the group'))).toBe('debug');
  });
});
