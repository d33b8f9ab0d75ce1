import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/base/config.js';
import { runCli } from '../../../src/cli/main.js';
import { memoryOutput } from '../../../src/cli/output.js';

// Every case here is rejected before the CLI opens a connection: these run without the stack.
const config = loadConfig({ CONSUMER_GROUP: 'fulfilment-main', KAFKA_BROKERS: '127.0.0.1:1' });

async function cli(...argv: string[]) {
  const out = memoryOutput();
  const code = await runCli(argv, { out, config });
  return { code, stdout: out.stdout, stderr: out.stderr };
}

describe('fulfilment command line', () => {
  it('--help lists every command and exits 0', async () => {
    const r = await cli('--help');
    expect(r.code).toBe(0);
    for (const c of [
      'dlq list',
      'dlq show',
      'dlq redrive',
      'dlq purge',
      'redeliver',
      'order show',
      'order retry',
      'workflow replay',
      'workflow export',
      'provision',
    ])
      expect(r.stdout).toContain(c);
  });

  it('the earlier name of redeliver is refused with the new one named (exit 2), and is not listed', async () => {
    const r = await cli('replay', '--from', 'earliest', '--rate', '5');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('`fulfilment replay` is now `fulfilment redeliver`, with the same options');
    expect((await cli('--help')).stdout).not.toMatch(/^ {2}replay /m);
  });

  it('workflow replay --help lists its options but not the development one', async () => {
    const r = await cli('workflow', 'replay', '--help');
    expect(r.code).toBe(0);
    for (const o of ['--run-id <id>', '--file <path>', '--json']) expect(r.stdout).toContain(o);
    expect(r.stdout).not.toContain('--workflows');
  });

  it.each([
    [['dlq', 'list', '--limit', '0'], "option '--limit <n>' argument '0' is invalid. expected a whole number ≥ 1"],
    [['dlq', 'list', '--offset', '-1'], "option '--offset <k>' argument '-1' is invalid"],
    [['dlq', 'list', '--page', 'two'], "option '--page <p>' argument 'two' is invalid"],
    [
      ['dlq', 'list', '--since', 'yesterday'],
      "option '--since <time>' argument 'yesterday' is invalid. expected an RFC 3339 time",
    ],
    [['dlq', 'list', '--offset', '5', '--page', '2'], '--offset and --page both say where the page starts'],
    [['dlq', 'list', '--nope'], "unknown option '--nope'"],
    [
      ['dlq', 'show', 'abc'],
      "value 'abc' is invalid for argument 'partition:offset'. expected partition:offset such as 0:42",
    ],
    [['dlq', 'show'], "missing required argument 'partition:offset'"],
    [['dlq', 'show', '0:1', '--redact-fields', ','], "option '--redact-fields <list>' argument ',' is invalid"],
    [['dlq', 'redrive'], 'choose what to redrive: --id <partition:offset> (repeatable), filters'],
    [['dlq', 'redrive', '--id', '0:1', '--all'], '--id cannot be combined with filters or --all'],
    [['dlq', 'redrive', '--all', '--tenant', 't1'], '--all cannot be combined with filters'],
    [
      ['dlq', 'redrive', '--all', '--rate', '0'],
      "option '--rate <per-second>' argument '0' is invalid. expected a rate in records per second",
    ],
    [['dlq', 'redrive', '--id', '1-2'], "option '--id <partition:offset>' argument '1-2' is invalid"],
    [
      ['dlq', 'redrive', '--all', '--operator', ''],
      "option '--operator <name>' argument '' is invalid. expected a name of 1–128 characters without control characters",
    ],
    [
      ['dlq', 'redrive', '--all', '--operator', 'a\u0007b'],
      "option '--operator <name>' argument 'a\u0007b' is invalid",
    ],
    [['dlq', 'redrive', '--force'], 'choose what to redrive: --id <partition:offset> (repeatable), filters'],
    [['dlq', 'redrive', '--again', '--id', '0:1', '--tenant', 't1'], '--id cannot be combined with filters or --all'],
    [['dlq', 'purge'], "required option '--before <time>' not specified"],
    [
      ['dlq', 'purge', '--before', 'yesterday'],
      "option '--before <time>' argument 'yesterday' is invalid. expected an RFC 3339 time",
    ],
    [
      ['dlq', 'purge', '--before', '2999-01-01T00:00:00Z'],
      '--before 2999-01-01T00:00:00.000Z is in the future: a purge deletes records written before a past time',
    ],
    [['dlq', 'purge', '--before', '30d', '--yes', '--dry-run'], '--yes and --dry-run contradict each other'],
    [['dlq', 'purge', '--before', '30d', '--operator', ''], "option '--operator <name>' argument '' is invalid"],
    [['dlq', 'purge', '--before', '30d', '--all'], "unknown option '--all'"],
    [['redeliver', '--rate', '5'], "required option '--from <point>' not specified"],
    [
      ['redeliver', '--from', 'soon', '--rate', '5'],
      "option '--from <point>' argument 'soon' is invalid. expected earliest, latest, an RFC 3339 time",
    ],
    [['redeliver', '--from', 'earliest'], '--rate <events/s> is required'],
    [['redeliver', '--from', 'earliest', '--rate', 'fast'], "option '--rate <events/s>' argument 'fast' is invalid"],
    [
      ['redeliver', '--from', 'earliest', '--rate', '5', '--group', 'fulfilment-main'],
      "--group fulfilment-main is the service's own consumer group (CONSUMER_GROUP)",
    ],
    [['order', 'show', 'acme-eu'], "value 'acme-eu' is invalid for argument 'tenant/order'. expected <tenant>/<order>"],
    [
      ['order', 'show', 'acme eu/o-1'],
      "value 'acme eu/o-1' is invalid for argument 'tenant/order'. expected <tenant>/<order>, each 1–64 of A–Z a–z 0–9 . _ : - starting with a letter or digit",
    ],
    [['order', 'show', '-acme/o-1'], "unknown option '-acme/o-1'"],
    [
      ['order', 'show', 'acme/o-1', '--timeout', '0'],
      "option '--timeout <seconds>' argument '0' is invalid. expected a whole number ≥ 1",
    ],
    [
      ['workflow', 'replay'],
      'workflow replay: give the workflow id (its history is fetched from Temporal) or --file <history.json>',
    ],
    [
      ['workflow', 'replay', 'order/acme/o-1', '--run-id', 'latest'],
      "option '--run-id <id>' argument 'latest' is invalid. expected a run id, a UUID",
    ],
    [
      ['workflow', 'replay', '--file', 'h.json', '--run-id', '0f8fad5b-d9cb-469f-a165-70867728950e'],
      '--run-id picks a run on the server, and --file holds one run already',
    ],
    [['workflow', 'replay', '--file', ''], "option '--file <path>' argument '' is invalid. expected a path"],
    [
      ['workflow', 'replay', ''],
      "value '' is invalid for argument 'workflowId'. expected a workflow id of 1–1000 characters",
    ],
    [['workflow', 'export'], "missing required argument 'workflowId'"],
    [
      ['workflow', 'export', 'order/acme/o-1', '--out', ' '],
      "option '--out <path>' argument ' ' is invalid. expected a path",
    ],
    [[], 'Usage: fulfilment'],
  ])('%j → exit 2: %s', async (argv, message) => {
    const r = await cli(...argv);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stdout).toBe('');
  });

  it('a bad environment is bad input too, named by variable', async () => {
    const out = memoryOutput();
    const code = await runCli(['dlq', 'list'], { out, env: { KAFKA_BROKERS: 'not a broker' } });
    expect(code).toBe(2);
    expect(out.stderr).toContain('KAFKA_BROKERS="not a broker" is invalid: expected host:port');
  });
});

describe('the default name of an exported history', () => {
  it.each([
    ['order/acme-eu/o-1008', undefined, 'order-acme-eu-o-1008.json'],
    ['order/acme-eu/o:1008', '0f8fad5b-d9cb-469f-a165-70867728950e', 'order-acme-eu-o-1008-0f8fad5b.json'],
    ['../../etc/passwd', undefined, 'etc-passwd.json'],
    ['.hidden', undefined, 'hidden.json'],
    ['///', undefined, 'workflow.json'],
    ['naïve order/über', undefined, 'na-ve-order-ber.json'],
  ])('%s (run %s) → %s', async (workflowId, runId, name) => {
    const { historyFileName } = await import('../../../src/cli/workflow/options.js');
    expect(historyFileName(workflowId, runId)).toBe(name);
  });

  it('is never longer than 120 characters before the run and .json', async () => {
    const { historyFileName } = await import('../../../src/cli/workflow/options.js');
    expect(historyFileName('x'.repeat(500))).toBe(`${'x'.repeat(120)}.json`);
  });
});
