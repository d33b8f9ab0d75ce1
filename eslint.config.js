// Lint keeps workflow code deterministic: workflows are replayed, so they may not touch I/O, clocks or Node builtins.
// Product code reaches Kafka only through the port in src/adapters/kafka/. Imports point down the layers, and the
// folders are the layers (a module may import from its own layer or lower ones, never higher). Promises in product
// code are awaited or marked `void` (the type-aware rules at the end). Everything else gets the recommended
// TypeScript rules.
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
  'Product code reaches Kafka through the port in src/adapters/kafka/ (client, records, sender, admin, topic-reader); only src/adapters/kafka/ and the tooling import kafkajs.';
const kafkaPort = {
  paths: [{ name: 'kafkajs', message: kafkaPortOnly }],
  patterns: [{ group: ['kafkajs/*'], message: kafkaPortOnly }],
};

/**
 * The layers of the product, top down; each is a folder. A module may import from its own layer and the ones below,
 * never from one above: each layer's glob below lists what it may not import (import specifiers, gitignore-style).
 *
 *   entry       src/service.ts, src/app.ts, src/cli/   what a process runs
 *   roles       src/roles/       the worker, the bridge, provisioning, the lag exporter, and what a role's process shares
 *   reconcile   src/reconcile/   the reconciler: the CLI and the worker run it; it imports no entry point and no role
 *   domain      src/domain/, workflows/, activities/   the order's workflows, their activities, and the starter
 *                                settings that speak the workflows' contract
 *   adapters    src/adapters/    Kafka, PostgreSQL, the warehouse, Temporal's deployment API, tracing, the event schemas,
 *                                the payload codec, the dead letters, the status events' outbox and relay
 *   base        src/base/        configuration, logs, metrics, health, start-up, lifecycle, tenants' shares
 *   vocabulary  src/vocabulary/  the order's words, its rules, and policies written once as data; imports only itself
 *
 * workflows/ and activities/ stay at the top: workflows/ is the bundle Temporal loads into its sandbox, held tighter
 * still (an allow-list, below: its own files, the vocabulary, the SDK's workflow side and activity types), and the
 * replay tooling reads it by that path in every recorded commit; activities/ is its counterpart outside the sandbox.
 */
const ENTRY = ['**/cli/**', '**/app.js', '**/service.js'];
const ROLES = ['**/roles/**'];
const RECONCILE = ['**/reconcile/**'];
const DOMAIN = ['**/domain/**', '**/activities/**', '**/workflows/**'];
const ADAPTERS = ['**/adapters/**'];

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
    ignores: ['src/adapters/kafka/**'],
    rules: { 'no-restricted-imports': ['error', { ...kafkaPort, patterns: [...kafkaPort.patterns, productOnly] }] },
  },
  {
    files: ['src/roles/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', layer(ENTRY, 'a role is started by the entry points, and never imports them')],
    },
  },
  // A role does not reach into another: what they share lies below them (or in src/roles/role.ts).
  {
    files: ['src/roles/worker/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer([...ENTRY, '**/bridge/**'], 'the worker role does not import the bridge'),
      ],
    },
  },
  {
    files: ['src/roles/bridge/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer(
          [...ENTRY, '**/worker/**', ...RECONCILE],
          'the bridge role imports neither the worker nor the reconciler',
        ),
      ],
    },
  },
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
  {
    files: ['src/domain/**/*.ts', 'activities/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer([...ENTRY, ...ROLES, ...RECONCILE], "the order's effects know nothing of the roles that run them"),
      ],
    },
  },
  {
    files: ['src/adapters/**/*.ts'],
    ignores: ['src/adapters/kafka/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer(
          [...ENTRY, ...ROLES, ...RECONCILE, ...DOMAIN],
          'an adapter serves the layers above it and imports none of them',
        ),
      ],
    },
  },
  // The Kafka port itself is the one place kafkajs may be imported.
  {
    files: ['src/adapters/kafka/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            productOnly,
            {
              group: [...ENTRY, ...ROLES, ...RECONCILE, ...DOMAIN],
              message: 'Imports point down the layers (eslint.config.js): the Kafka port imports nothing above it',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/base/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        layer([...ENTRY, ...ROLES, ...RECONCILE, ...DOMAIN, ...ADAPTERS], 'the base layer imports nothing above it'),
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
                '^(?!\\./[^/]+\\.js$|\\.\\./src/vocabulary/[^/]+\\.js$|\\.\\./activities/[^/]+\\.js$|@temporalio/(workflow|common)$|@temporalio/interceptors-opentelemetry/lib/workflow/index\\.js$)',
              message:
                'workflows/ imports only its own files, src/vocabulary/, @temporalio/workflow (and @temporalio/common), and activity types (eslint.config.js)',
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
  // The vocabulary is what the workflow bundle may import besides its own files: it imports only itself.
  {
    files: ['src/vocabulary/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\./[^/]+\\.js$)',
              message:
                'The vocabulary imports only its own files: the workflow bundle takes it whole (eslint.config.js)',
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
