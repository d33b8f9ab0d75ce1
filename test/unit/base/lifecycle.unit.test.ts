import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Lifecycle } from '../../../src/base/lifecycle.js';
import { createLogger } from '../../../src/base/log.js';

const silent = createLogger('silent');

describe('Lifecycle', () => {
  it('stops the last started first, a role included as one part in its own order, and says what is still stopping', async () => {
    const order: string[] = [];
    const app = new Lifecycle(silent);
    const role = new Lifecycle(silent);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    app.defer('server', () => void order.push('server'));
    app.defer('client', () => void order.push('client'));
    role.defer('pool', () => void order.push('pool'));
    role.defer('worker', async () => {
      order.push('worker');
      await held;
    });
    role.defer('relay', () => void order.push('relay'));
    app.include('worker role', role);
    app.defer('bridge', () => void order.push('bridge'));

    expect(app.stillStopping()).toEqual([]);
    const stopped = app.stop();
    await expect.poll(() => order).toEqual(['bridge', 'relay', 'worker']);
    expect(app.stillStopping()).toEqual(['worker', 'pool', 'client', 'server']);
    release();
    await stopped;
    expect(order).toEqual(['bridge', 'relay', 'worker', 'pool', 'client', 'server']);
    expect(app.stillStopping()).toEqual([]);
    expect(app.stop()).toBe(stopped); // idempotent
  });

  it('logs a stop that fails and goes on with the next', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const life = new Lifecycle(logger);
    const order: string[] = [];
    life.defer('first', () => void order.push('first'));
    life.defer('broken', () => Promise.reject(new Error('refused')));
    await life.stop();
    expect(order).toEqual(['first']);
    expect(lines.join('')).toMatch(
      /"stopping":"broken".*error while stopping|error while stopping.*"stopping":"broken"/,
    );
  });

  it('a start-up that fails half way stops what it had started, then throws', async () => {
    const order: string[] = [];
    const life = new Lifecycle(silent);
    await expect(
      life.startOrUndo(async (l) => {
        l.defer('connection', () => void order.push('connection'));
        l.defer('pool', () => void order.push('pool'));
        throw new Error('the schema is behind');
      }),
    ).rejects.toThrow('the schema is behind');
    expect(order).toEqual(['pool', 'connection']);
    expect(() => life.defer('late', () => undefined)).toThrow(/stopping/);
  });
});
