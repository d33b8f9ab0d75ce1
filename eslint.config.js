// Lint keeps workflow code deterministic: workflows are replayed, so they may not touch I/O, clocks or Node builtins.
// Product code reaches Kafka only through the port in src/kafka/. Imports point down the layers below (a module may
// import from its own layer or lower ones, never higher). Promises in product code are awaited or marked `void` (the
// type-aware rules at the end). Everything else gets the recommended TypeScript rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const forbiddenInWorkflows = {
  patterns: [
    { group: ['node:*'], message: 'Workflow code must be deterministic: no Node builtins.' },
    { group: ['pg', 'pg/*', 'kafkajs', 'kafkajs/*'], message: 'Workflow code may not do I/O; use an activity.' },
  ],
  paths: ['fs', 'path', 'os', 'crypto', 'http', 'https', 'net', 'child_process', 'timers', 'process'].map((name) => ({
    name,
    message: 'Workflow code must be deterministic: no Node builtins.',
  })),
};

const kafkaPortOnly =
  'Product code reaches Kafka through the port in src/kafka/ (client, records, sender, admin, topic-reader); only src/kafka/ and the tooling import kafkajs.';
const kafkaPort = {
  paths: [{ name: 'kafkajs', message: kafkaPortOnly }],
  patterns: [{ group: ['kafkajs/*'], message: kafkaPortOnly }],
};

/**
 * The layers of the product, top down. A module may import from its own layer and the ones below, never from one
 * above: each entry lists what the layers below it may not import (import specifiers, gitignore-style).
 *
 *   entry     src/service.ts, src/app.ts, src/cli/            what a process runs
 *   roles     src/worker/, src/bridge/, src/role.ts, src/provision/, src/lag/
 *   (beside)  src/reconcile/: the reconciler, which the CLI runs; it imports no entry point and no role
 *   domain    activities/, src/dlq/, workflows/,              the order's effects, its workflows, and the worker
 *             src/temporal.ts, src/workflow-settings.ts        and starter settings that speak the workflows' contract
 *   adapters  src/kafka/, src/db.ts, src/store/, src/warehouse/, src/tracing/, src/events/, src/codec/, src/temporal-refusal.ts,
 *             src/status-events/ (a status change → the outbox → the relay onto Kafka), src/deployment/ (worker
 *             versions in Temporal's deployment API)
 *   base      src/config.ts, src/config/, src/log.ts, src/metrics.ts (and src/reconcile-metrics.ts), src/outcomes.ts, src/errors.ts, src/retry-policies.ts,
 *             src/health.ts, src/startup.ts, src/package-root.ts, src/sleep.ts, src/timeout.ts, src/lifecycle.ts,
 *             src/observability.ts
 *   vocabulary src/order.ts: the order's words, importing nothing; src/order-rules.ts: what each event does to an
 *             order (the one table the workflow, the store and the late path consult), importing only the words;
 *             src/policy/: policies written once as data (the warehouse retry), importing nothing
 *
 * workflows/ is held tighter still (an allow-list, below): its own files, the vocabulary and the SDK's workflow side.
 */
const ENTRY = ['**/cli/**', '**/app.js', '**/service.js'];
const ROLES = ['**/worker/**', '**/bridge/**', '**/role.js', '**/provision/**', '**/lag/**'];
const DOMAIN = ['**/activities/**', '**/dlq/**', '**/workflows/**', '**/temporal.js', '**/workflow-settings.js'];
const ADAPTERS = [
  '**/kafka/**',
  '**/deployment/**',
  '**/store/**',
  '**/warehouse/**',
  '**/tracing/**',
  '**/events/**',
  '**/codec/**',
  '**/status-events/**',
  '**/temporal-refusal.js',
  '**/src/db.js',
  '../db.js',
  './db.js',
];

/** The rule for a layer: the Kafka port's, and no import from the layers listed (those above it). */
/** The product (src/, activities/, workflows/) never imports the tooling, the bench or the tests. */
const productOnly = {
  group: ['**/tools/**', '**/bench/**', '**/test/**'],
  message: 'The product never imports the tooling (tools/), the bench or the tests (eslint.config.js)',
};

function layer(above, why) {
  return {
    paths: kafkaPort.paths,
    patterns: [
      ...kafkaPort.patterns,
      productOnly,
      { group: above, message: `Imports point down the layers (eslint.config.js): ${why}` },
    ],
  };
}

export default tseslint.config(
  { ignores: ['node_modules/', '.stack/', '.stack-outage/', '.cache/', 'coverage/', 'dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/kafka/**'],
    rules: { 'no-restricted-imports': ['error', { ...kafkaPort, patterns: [...kafkaPort.patterns, productOnly] }] },
  },
  {
    files: ['src/worker/**/*.ts', 'src/bridge/**/*.ts', 'src/role.ts', 'src/provision/**/*.ts', 'src/lag/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', layer(ENTRY, 'a role is started by the entry points, and never imports them')],
    },
  },
  // The reconciler reads every source as the roles do, and is run by the CLI: it imports neither an entry nor a role.
  {
    files: ['src/reconcile/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer(
          [...ENTRY, ...ROLES],
          'the reconciler is run by the entry points and the roles, and imports none of them',
        ),
      ],
    },
  },
  // A role does not reach into the other: what they share lies below them.
  {
    files: ['src/worker/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer([...ENTRY, '**/bridge/**'], 'the worker role does not import the bridge'),
      ],
    },
  },
  {
    files: ['src/bridge/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer([...ENTRY, '**/worker/**'], 'the bridge role does not import the worker'),
      ],
    },
  },
  {
    files: ['activities/**/*.ts', 'src/dlq/**/*.ts', 'src/temporal.ts', 'src/workflow-settings.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer([...ENTRY, ...ROLES], "the order's effects know nothing of the roles that run them"),
      ],
    },
  },
  {
    files: [
      'src/kafka/**/*.ts',
      'src/store/**/*.ts',
      'src/warehouse/**/*.ts',
      'src/tracing/**/*.ts',
      'src/events/**/*.ts',
      'src/codec/**/*.ts',
      'src/status-events/**/*.ts',
      'src/deployment/**/*.ts',
      'src/temporal-refusal.ts',
      'src/db.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        layer([...ENTRY, ...ROLES, ...DOMAIN], 'an adapter serves the layers above it and imports none of them'),
      ],
    },
  },
  // The Kafka port itself is the one place kafkajs may be imported.
  {
    files: ['src/kafka/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            productOnly,
            {
              group: [...ENTRY, ...ROLES, ...DOMAIN],
              message: 'Imports point down the layers (eslint.config.js): the Kafka port imports nothing above it',
            },
          ],
        },
      ],
    },
  },
  {
    files: [
      'src/config.ts',
      'src/config/**/*.ts',
      'src/log.ts',
      'src/metrics.ts',
      'src/reconcile-metrics.ts',
      'src/outcomes.ts',
      'src/errors.ts',
      'src/retry-policies.ts',
      'src/health.ts',
      'src/startup.ts',
      'src/package-root.ts',
      'src/sleep.ts',
      'src/timeout.ts',
      'src/lifecycle.ts',
      'src/observability.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        layer(
          [...ENTRY, ...ROLES, ...DOMAIN, ...ADAPTERS, '!**/codec/keys.js'],
          'the base layer imports nothing above it',
        ),
      ],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', forbiddenInWorkflows],
      // The allow-list: workflows/ imports its own files, the order's vocabulary, the SDK's workflow side (and its
      // shared @temporalio/common), the OpenTelemetry workflow interceptors (tracing-interceptors.ts), and the
      // activities' types only (erased: the bundle never loads activity code).
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex:
                '^(?!\\./[^/]+\\.js$|\\.\\./src/order(-rules)?\\.js$|\\.\\./src/policy/[^/]+\\.js$|\\.\\./activities/[^/]+\\.js$|@temporalio/(workflow|common)$|@temporalio/interceptors-opentelemetry/lib/workflow/index\\.js$)',
              message:
                'workflows/ imports only its own files, src/order.ts, src/order-rules.ts, src/policy/ (data), @temporalio/workflow (and @temporalio/common), and activity types (eslint.config.js)',
            },
            {
              regex: '^\\.\\./activities/',
              allowTypeImports: true,
              message:
                'workflows/ takes only the types of activities (import type): the bundle must not load activity code',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/policy/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '.',
              message: 'A policy is data the workflow bundle imports: it imports nothing (eslint.config.js)',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/order.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '.', message: "The order's vocabulary imports nothing (eslint.config.js)" }] },
      ],
    },
  },
  {
    files: ['src/order-rules.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\./order\\.js$)',
              message: "The order's rules import only the order's words, src/order.ts (eslint.config.js)",
            },
          ],
        },
      ],
    },
  },
  // The local stack (tools/stack/) is tooling apart from the product: everything outside it reaches it through its one
  // entry, tools/stack/index.ts; only its own tests (test/stack/) look inside.
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'tools/**/*.ts'],
    ignores: ['tools/stack/**', 'test/stack/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // From tests and the bench (…/tools/stack/…), and from the other tools (./stack/…, ../stack/…).
              group: [
                '**/tools/stack/**',
                '!**/tools/stack/index.js',
                './stack/**',
                '!./stack/index.js',
                '../stack/**',
                '!../stack/index.js',
              ],
              message: 'Reach the local stack through its entry, tools/stack/index.ts (eslint.config.js)',
            },
          ],
        },
      ],
    },
  },
  // Type-aware, where a promise nobody awaits is a silent bug: a floating promise in a workflow or an activity loses
  // its failure (and in a workflow, its place in the history), and a promise handed where a callback's result is
  // ignored (an event handler, a timer) the same. `void` says "not awaited, on purpose".
  {
    files: ['src/**/*.ts', 'workflows/**/*.ts', 'activities/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: { '@typescript-eslint/no-floating-promises': 'error', '@typescript-eslint/no-misused-promises': 'error' },
  },
);
