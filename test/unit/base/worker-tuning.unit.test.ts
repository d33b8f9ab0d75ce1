import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/base/config.js';
import { configFailure } from '../../support/config-failure.js';

describe('worker tuning (WORKER_*)', () => {
  it('has the measured defaults', () => {
    const c = loadConfig({});
    expect([
      c.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
      c.WORKER_MAX_CONCURRENT_ACTIVITIES,
      c.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
      c.WORKER_MAX_CACHED_WORKFLOWS,
      c.WORKER_WORKFLOW_TASK_POLLERS,
      c.WORKER_ACTIVITY_TASK_POLLERS,
    ]).toEqual([40, 100, 100, 1000, 10, 10]);
  });

  it('reads each variable, and a cache of 0 turns the sticky cache off', () => {
    const c = loadConfig({
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '8',
      WORKER_WORKFLOW_TASK_POLLERS: '8',
      WORKER_MAX_CACHED_WORKFLOWS: '0',
      WORKER_ACTIVITY_TASK_POLLERS: '1',
    });
    expect([
      c.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
      c.WORKER_WORKFLOW_TASK_POLLERS,
      c.WORKER_MAX_CACHED_WORKFLOWS,
      c.WORKER_ACTIVITY_TASK_POLLERS,
    ]).toEqual([8, 8, 0, 1]);
  });

  it('names each bad value and what was expected', () => {
    const msg = configFailure({
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '1',
      WORKER_MAX_CONCURRENT_ACTIVITIES: 'many',
      WORKER_MAX_CACHED_WORKFLOWS: '-1',
    });
    expect(msg).toContain('WORKER_MAX_CONCURRENT_WORKFLOW_TASKS="1" is invalid: expected a whole number ≥ 2');
    expect(msg).toContain('WORKER_MAX_CONCURRENT_ACTIVITIES="many" is invalid: expected a whole number ≥ 1');
    expect(msg).toContain('WORKER_MAX_CACHED_WORKFLOWS="-1" is invalid: expected a whole number ≥ 0');
  });

  it('refuses more pollers than task slots, naming both variables', () => {
    const msg = configFailure({
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '4',
      WORKER_WORKFLOW_TASK_POLLERS: '6',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '2',
      WORKER_ACTIVITY_TASK_POLLERS: '3',
    });
    expect(msg).toContain(
      'WORKER_WORKFLOW_TASK_POLLERS=6 is more than WORKER_MAX_CONCURRENT_WORKFLOW_TASKS=4: expected at most 4 pollers',
    );
    expect(msg).toContain(
      'WORKER_ACTIVITY_TASK_POLLERS=3 is more than WORKER_MAX_CONCURRENT_ACTIVITIES=2: expected at most 2 pollers',
    );
  });
});
