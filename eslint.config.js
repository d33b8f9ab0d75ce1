// Lint keeps workflow code deterministic: workflows are replayed, so they may not touch I/O, clocks or
// Node builtins. Product code reaches Kafka only through the port in src/kafka/. Everything else gets the
// recommended TypeScript rules.
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

const kafkaPortOnly = 'Product code reaches Kafka through the port in src/kafka/ (client, records, sender, admin, topic-reader); only src/kafka/ and the tooling import kafkajs.';

/** kafkajs outside the port; the tooling (src/stack/, src/demo.ts, being moved to tools/) may use it directly. */
const forbiddenOutsideKafkaPort = {
  paths: [{ name: 'kafkajs', message: kafkaPortOnly }],
  patterns: [{ group: ['kafkajs/*'], message: kafkaPortOnly }],
};

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
    files: ['src/**/*.ts', 'activities/**/*.ts'],
    ignores: ['src/kafka/**'],
    rules: { 'no-restricted-imports': ['error', forbiddenOutsideKafkaPort] },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', forbiddenInWorkflows] },
  },
);
