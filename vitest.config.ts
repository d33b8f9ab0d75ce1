import { defineConfig } from 'vitest/config';

// Unit tests (pure, no services) and integration tests on the real local stack, at most two files at a time on
// the 2-core machines this targets. Outage tests stop and restart the stack's services, so they run one file at a
// time, in any order (each brings back what it stopped; `--sequence.shuffle` runs them so), and, in one run with the
// others, last; `npm test` (tools/test.ts) gives them a stack of their own in a network namespace where it can, and
// runs them beside the others.

/**
 * Tests of what must be compiled first (tools/test-builds.ts: the TLS Temporal's server, kubeconform, kustomize,
 * promtool, the Kubernetes schemas): `npm test` builds it beside the suite and runs these once it is done. Run on
 * their own on a fresh machine, a hook may wait for a first build: their hooks get the time one takes.
 */
const NEEDS_BUILDS = [
  'test/deploy/**/*.int.test.ts',
  'test/integration/temporal-security.int.test.ts',
  'test/integration/secured-end-to-end.int.test.ts',
  'test/stack/temporal-tls.int.test.ts',
];

export default defineConfig({
  test: {
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
    maxWorkers: 2,
    projects: [
      // A unit test's work is bounded by its input (e.g. the parser property's 20,000 cases), not by time: the
      // deadline only catches a hang, and must hold on a machine whose cores are busy with other work.
      // test/unit/ mirrors the product's folders (src/'s layers, workflows/, activities/) and the tooling's.
      { test: { name: 'unit', include: ['test/{unit,workflow,stack}/**/*.unit.test.ts'], testTimeout: 120_000 } },
      // The repository's own rules: layers, file and function sizes, links and paths in the docs, the README.
      { test: { name: 'repository', include: ['test/repository/**/*.test.ts'], testTimeout: 120_000 } },
      // The deployment files (Compose, Kubernetes, Prometheus rules, the dashboard) checked without a cluster.
      { test: { name: 'deploy', include: ['test/deploy/**/*.unit.test.ts'], testTimeout: 120_000 } },
      {
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts'],
          exclude: ['**/node_modules/**', 'test/outage/**', 'test/failover/**', ...NEEDS_BUILDS],
          testTimeout: 180_000,
          hookTimeout: 240_000,
        },
      },
      {
        test: {
          name: 'needs-builds',
          include: NEEDS_BUILDS,
          testTimeout: 180_000,
          hookTimeout: 30 * 60_000,
        },
      },
      {
        test: {
          name: 'outage',
          include: ['test/outage/**/*.int.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 240_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        // On the stack's three-node Kafka (STACK_KAFKA=cluster): nodes are killed and restarted, one file at a time.
        test: {
          name: 'failover',
          include: ['test/failover/**/*.int.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 240_000,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
