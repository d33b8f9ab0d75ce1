/**
 * Whether a version has live workers (src/adapters/deployment/live-workers.ts): the decision `deployment
 * current|rollback` take on it, the pollers counted from what Temporal lists, and which versions the worker's gauge
 * asks about.
 */
import { describe, expect, it } from 'vitest';
import {
  liveWorkersVerdict,
  pollersByVersion,
  versionsToCheck,
  type VersionPollers,
} from '../../../../src/adapters/deployment/live-workers.js';
import type { DeploymentView } from '../../../../src/adapters/deployment/routing.js';

const version = (pollers: number): VersionPollers => ({
  buildId: 'build-b',
  pollers,
  taskQueues: ['orders (workflow)', 'orders (activity)'],
});
const verdict = (pollers: number, force: boolean) =>
  liveWorkersVerdict({
    deployment: 'orders',
    version: version(pollers),
    command: 'fulfilment deployment current build-b',
    force,
  });

describe('liveWorkersVerdict', () => {
  it('lets a version with pollers take new orders, forced or not, and warns of nothing', () => {
    expect(verdict(1, false)).toEqual({ go: true });
    expect(verdict(12, true)).toEqual({ go: true });
  });

  it('refuses a version without pollers, naming it, its queues, why, and how to override', () => {
    const v = verdict(0, false);
    expect(v.go).toBe(false);
    if (v.go) return;
    expect(v.refusal).toContain('version build-b of orders has no live workers');
    expect(v.refusal).toContain('orders (workflow), orders (activity)');
    expect(v.refusal).toContain('New orders would start on it and wait with nothing to run them');
    expect(v.refusal).toContain('WORKER_BUILD_ID=build-b');
    expect(v.refusal).toContain('`fulfilment deployment current build-b --force`');
  });

  it('goes ahead without pollers when forced, with a warning that says what follows', () => {
    const v = verdict(0, true);
    expect(v).toMatchObject({ go: true });
    expect(v.go && v.warning).toMatch(/^warning: version build-b of orders has no live workers.*\(--force\)/);
  });

  it('says when the version has no task queue at all (it never polled)', () => {
    const v = liveWorkersVerdict({
      deployment: 'orders',
      version: { buildId: 'x', pollers: 0, taskQueues: [] },
      command: 'fulfilment deployment rollback',
      force: false,
    });
    expect(!v.go && v.refusal).toContain('on its task queues (none;');
    expect(!v.go && v.refusal).toContain('`fulfilment deployment rollback --force`');
  });
});

describe('pollersByVersion', () => {
  /** A WorkflowService that knows two versions on one queue, and the pollers listed on it, recording its calls. */
  function fakeService() {
    const calls: string[] = [];
    const poller = (deploymentName: string, buildId: string) => ({ deploymentOptions: { deploymentName, buildId } });
    const service = {
      describeWorkerDeploymentVersion: async (req: { deploymentVersion: { buildId: string } }) => {
        calls.push(`version ${req.deploymentVersion.buildId}`);
        if (req.deploymentVersion.buildId === 'retired') throw Object.assign(new Error('not found'), { code: 5 });
        return {
          versionTaskQueues: [
            { name: 'orders', type: 1 },
            { name: 'orders', type: 2 },
          ],
        };
      },
      describeTaskQueue: async (req: { taskQueue: { name: string }; taskQueueType: number }) => {
        calls.push(`queue ${req.taskQueue.name}/${req.taskQueueType}`);
        return {
          pollers:
            req.taskQueueType === 1
              ? [poller('orders', 'a'), poller('orders', 'a'), poller('other', 'b')]
              : [poller('orders', 'a')],
        };
      },
    };
    return { service: service as unknown as Parameters<typeof pollersByVersion>[0], calls };
  }

  it("counts each version's own pollers over its queues, another deployment's build of that name not among them", async () => {
    const { service, calls } = fakeService();
    const found = await pollersByVersion(service, 'default', 'orders', ['a', 'b', 'retired']);
    expect(found.get('a')).toEqual({
      buildId: 'a',
      pollers: 3,
      taskQueues: ['orders (workflow)', 'orders (activity)'],
    });
    expect(found.get('b')?.pollers).toBe(0);
    expect(found.get('retired')).toEqual({ buildId: 'retired', pollers: 0, taskQueues: [] });
    // One DescribeTaskQueue per queue and type, however many versions share it.
    expect(calls.filter((c) => c.startsWith('queue')).sort()).toEqual(['queue orders/1', 'queue orders/2']);
  });

  it('lets any other failure through (a reading that failed is not "no workers")', async () => {
    const { service } = fakeService();
    (service as unknown as { describeTaskQueue: () => Promise<never> }).describeTaskQueue = async () => {
      throw Object.assign(new Error('unavailable'), { code: 14 });
    };
    await expect(pollersByVersion(service, 'default', 'orders', ['a'])).rejects.toThrow('unavailable');
  });
});

describe('versionsToCheck', () => {
  it('asks about every version that ever took new runs, not one that never did', () => {
    const view: Pick<DeploymentView, 'versions'> = {
      versions: [
        { buildId: 'a', status: 'drained' },
        { buildId: 'b', status: 'draining' },
        { buildId: 'c', status: 'current' },
        { buildId: 'd', status: 'ramping' },
        { buildId: 'e', status: 'inactive' },
      ],
    };
    expect(versionsToCheck(view)).toEqual(['a', 'b', 'c', 'd']);
  });
});
