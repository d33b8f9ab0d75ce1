import { spawn } from 'node:child_process';
import type { Producer } from 'kafkajs';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { readRedriveLog } from '../../src/cli/dlq/redrive-log.js';
import { dlqList, type DlqListOptions } from '../../src/cli/dlq/list.js';
import { dlqPurge } from '../../src/cli/dlq/purge.js';
import { dlqRedrive } from '../../src/cli/dlq/redrive.js';
import { dlqShow } from '../../src/cli/dlq/show.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import { reducedDeadLetterMessage } from '../../src/adapters/dlq/dead-letter.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('fulfilment dlq: list, show, redrive', () => {
  let s: Scenario;
  let app: App;
  /** Writes the dead letters these tests place by hand: idempotent, so a send retried under load is not written twice. */
  let exact: Producer;
  const ctx = () => ({ config: s.config, out: memoryOutput() });
  const list = async (opts: DlqListOptions = {}) => dlqList(ctx(), { limit: 100, ...opts });
  const positions = async (opts: DlqListOptions = {}) => (await list(opts)).records.map((r) => r.position);
  let tenantA: string, tenantB: string, tenantOld: string, tenantRedrive: string;
  /** The copies test's own DLQ topic and tenant (created by that test). */
  let copiesDlq: string | undefined;
  let tenantDup: string | undefined;
  let redriveTarget: ReturnType<typeof events.placed>;
  /** First failure of the dead letter at 0:2. */
  let twoDaysAgo: string;
  /** Topics the tests create (their own DLQs, and the redrive logs `dlq redrive` creates): deleted afterwards. */
  const extraTopics: string[] = [];
  /** Its own DLQ topic, created with `partitions` partitions; its redrive log is deleted afterwards too. */
  const ownDlq = async (name: string, partitions = 1) => {
    const topic = `${s.config.DLQ_TOPIC}.${name}`;
    await s.admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
    });
    extraTopics.push(topic, `${topic}.redrives`);
    return { ...s.config, DLQ_TOPIC: topic };
  };
  const written = (offsets: { high: string }[]) => offsets.reduce((n, o) => n + Number(o.high), 0);
  const auditLines = (stderr: string) =>
    stderr
      .split('\n')
      .filter((l) => l.startsWith('{"audit"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  /** DLQ positions of the poison records. The bridge works a partition in lanes, so their DLQ order varies. */
  const poisonAt = { notJson: '', a1: '', a2: '', b1: '' };
  const pos = (p: string) => ({ partition: Number(p.split(':')[0]), offset: BigInt(p.split(':')[1]!) });

  /** The headers the bridge writes, for records an operator would find in the DLQ after some failure. */
  const dlqHeaders = (
    failedAt: string,
    errorClass: string,
    tenantId: string,
    eventId: string,
    message: string,
    origin = '1:100',
  ) => ({
    'dlq-error-class': errorClass,
    'dlq-error-message': message,
    'dlq-original-topic': s.config.ORDERS_TOPIC,
    'dlq-original-partition': origin.split(':')[0]!,
    'dlq-original-offset': origin.split(':')[1]!,
    'dlq-original-timestamp': String(Date.parse(failedAt)),
    'dlq-consumer-group': s.config.CONSUMER_GROUP,
    'dlq-attempts': '1',
    'dlq-first-failure-at': failedAt,
    'dlq-last-failure-at': failedAt,
    'dlq-event-id': eventId,
    'dlq-tenant-id': tenantId,
  });

  beforeAll(async () => {
    s = await scenario('dlq-cli');
    exact = s.kafka.producer({ allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 });
    await exact.connect();
    app = await s.startInstance();
    [tenantA, tenantB, tenantOld, tenantRedrive] = [s.tenant('a'), s.tenant('b'), s.tenant('old'), s.tenant('redrive')];

    // DLQ 0:0–0:2, written as an operator would find them: two old Temporal refusals and a VALID event that was
    // dead-lettered because of a bug (so redriving it must fulfil the order — once).
    const old1 = events.placed(tenantOld, 'old-1');
    const old2 = events.placed(tenantOld, 'old-2');
    redriveTarget = events.placed(tenantRedrive, 'redrive-1', {
      data: {
        customerId: 'cust-secret-r1',
        lines: [{ sku: 'SKU-R', quantity: 2 }],
        shippingAddress: { name: 'Grace Hopper', city: 'Arlington' },
      },
    });
    twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString();
    await s.produce(
      [
        {
          key: `${tenantOld}/old-1`,
          value: old1,
          headers: dlqHeaders(
            '2025-01-15T10:00:00.000Z',
            'EventRejectedByTemporalError',
            tenantOld,
            old1.eventId,
            'Temporal rejected the event: too large',
            '1:98',
          ),
        },
        {
          key: `${tenantOld}/old-2`,
          value: old2,
          headers: dlqHeaders(
            '2025-06-15T10:00:00.000Z',
            'EventRejectedByTemporalError',
            tenantOld,
            old2.eventId,
            'Temporal rejected the event: too large',
            '1:99',
          ),
        },
        {
          key: `${tenantRedrive}/redrive-1`,
          value: redriveTarget,
          headers: {
            'correlation-id': 'corr-redrive-1',
            traceparent: `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`,
            ...dlqHeaders(
              twoDaysAgo,
              'DependencyUnavailableError',
              tenantRedrive,
              redriveTarget.eventId,
              'misclassified outage (bug 123)',
            ),
          },
        },
      ].map((m) => ({ ...m, partition: 0 })),
      s.config.DLQ_TOPIC,
    );

    // DLQ 0:3–0:6: real poison records, dead-lettered by the running service.
    const a2 = events.placed(tenantA, 'a2', {
      data: {
        customerId: 'cust-secret-a2',
        lines: [{ sku: 'SKU-1', quantity: 0 }],
        shippingAddress: { name: 'Ada Lovelace', street: '12 St James Sq' },
      },
    });
    await s.produce(
      [
        { key: 'poison-not-json', value: Buffer.from('{"eventId": "abc", oops'), headers: { note: 'not JSON' } },
        { key: `${tenantA}/a1`, value: { ...events.placed(tenantA, 'a1'), eventId: undefined } },
        { key: `${tenantA}/a2`, value: a2 },
        { key: `${tenantB}/b1`, value: { ...events.placed(tenantB, 'b1'), orderVersion: 'two' } },
      ].map((m) => ({ ...m, partition: 0 })),
    );
    await waitFor('the four poison records in the DLQ', async () => (await list()).total === 7, 60_000, 500);
    for (const r of (await list()).records.slice(3)) {
      if (r.errorMessage?.includes('not JSON')) poisonAt.notJson = r.position;
      else if (r.tenantId === tenantA && r.errorMessage?.includes('eventId')) poisonAt.a1 = r.position;
      else if (r.tenantId === tenantA && r.errorMessage?.includes('quantity')) poisonAt.a2 = r.position;
      else if (r.tenantId === tenantB) poisonAt.b1 = r.position;
    }
    expect(new Set(Object.values(poisonAt))).toEqual(new Set(['0:3', '0:4', '0:5', '0:6']));
  });

  afterAll(async () => {
    await app?.client.workflow
      .getHandle(orderWorkflowId(tenantRedrive, 'redrive-1'))
      .terminate('test over')
      .catch(() => undefined);
    if (tenantDup)
      await app?.client.workflow
        .getHandle(orderWorkflowId(tenantDup, 'dup-1'))
        .terminate('test over')
        .catch(() => undefined);
    if (copiesDlq) extraTopics.push(copiesDlq, `${copiesDlq}.redrives`);
    const existing = new Set(await s?.admin.listTopics().catch(() => [] as string[]));
    const doomed = [...extraTopics, `${s?.config.DLQ_TOPIC}.redrives`].filter((t) => existing.has(t));
    if (doomed.length > 0) await s?.admin.deleteTopics({ topics: doomed }).catch(() => undefined);
    await exact?.disconnect();
    await s?.close();
  });

  it('lists every dead letter in position order, as a table or JSON lines, a page at a time', async () => {
    const out = memoryOutput();
    const all = await dlqList({ config: s.config, out });
    expect(all.total).toBe(7);
    expect(all.records.map((r) => r.position)).toEqual(['0:0', '0:1', '0:2', '0:3', '0:4', '0:5', '0:6']);
    const lines = out.lines();
    expect(lines[0]).toMatch(/^POSITION\s+COPIES\s+FAILED AT\s+ERROR CLASS\s+TENANT\s+EVENT ID\s+ERROR$/);
    expect(lines[1]).toMatch(/^0:0\s+1\s+2025-01-15T10:00:00.000Z\s+EventRejectedByTemporalError\s+old-/);
    expect(lines.find((l) => l.startsWith(`${poisonAt.notJson} `))).toMatch(
      /^0:\d\s+1\s+\S+\s+MalformedEventError\s+-\s+-\s+record value is not JSON/,
    );
    expect(lines.at(-1)).toBe(`7 of 7 dead letters in ${s.config.DLQ_TOPIC} match (no filter); showing 1–7`);

    expect(await positions({ limit: 2 })).toEqual(['0:0', '0:1']);
    expect(await positions({ limit: 2, skip: 2 })).toEqual(['0:2', '0:3']);
    expect(await positions({ limit: 3, skip: 6 })).toEqual(['0:6']);
    const paged = memoryOutput();
    await dlqList({ config: s.config, out: paged }, { limit: 2, skip: 2 });
    expect(paged.lines().at(-1)).toContain('showing 3–4; next page: --offset 4 or --page 3');
    const past = await list({ skip: 10 });
    expect(past).toMatchObject({ total: 7, records: [] });

    const json = memoryOutput();
    await dlqList({ config: s.config, out: json }, { json: true, limit: 3 });
    const objects = json.lines().map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(objects).toHaveLength(3);
    expect(objects[2]).toMatchObject({
      position: '0:2',
      errorClass: 'DependencyUnavailableError',
      tenantId: tenantRedrive,
      eventId: redriveTarget.eventId,
      originalTopic: s.config.ORDERS_TOPIC,
      originalPosition: '1:100',
      attempts: 1,
      copies: 1,
      copyPositions: [],
    });
    expect(json.stderr).toContain('showing 1–3; next page: --offset 3');
  });

  it('filters by error class, tenant and failure time', async () => {
    expect(await positions({ filter: { errorClass: 'malformedeventerror' } })).toEqual(['0:3', '0:4', '0:5', '0:6']);
    const tenantAAt = [poisonAt.a1, poisonAt.a2].sort();
    expect(await positions({ filter: { tenant: tenantA } })).toEqual(tenantAAt);
    expect(await positions({ filter: { tenant: tenantB } })).toEqual([poisonAt.b1]);
    expect(await positions({ filter: { tenant: 'nobody' } })).toEqual([]);
    expect(
      await positions({ filter: { since: new Date('2025-03-01T00:00:00Z'), until: new Date('2025-12-31T00:00:00Z') } }),
    ).toEqual(['0:1']);
    expect(await positions({ filter: { until: new Date('2025-03-01T00:00:00Z') } })).toEqual(['0:0']);
    expect(await positions({ filter: { since: new Date(Date.now() - 3_600_000) } })).toEqual([
      '0:3',
      '0:4',
      '0:5',
      '0:6',
    ]);
    expect(
      await positions({
        filter: { errorClass: 'EventRejectedByTemporalError', since: new Date('2025-03-01T00:00:00Z') },
      }),
    ).toEqual(['0:1']);
    // the same filters through the command line, a relative time included
    const out = memoryOutput();
    expect(
      await runCli(['dlq', 'list', '--since', '1h', '--tenant', tenantA, '--json'], { out, config: s.config }),
    ).toBe(0);
    expect(out.lines().map((l) => (JSON.parse(l) as { position: string }).position)).toEqual(tenantAAt);
  });

  it('shows one record in full with personal data redacted, revealed only on request', async () => {
    const out = memoryOutput();
    const shown = await dlqShow({ config: s.config, out }, { position: pos(poisonAt.a2) });
    expect(shown.headers).toMatchObject({
      'dlq-error-class': 'MalformedEventError',
      'dlq-tenant-id': tenantA,
      'dlq-original-topic': s.config.ORDERS_TOPIC,
    });
    expect(shown.headers['dlq-error-message']).toContain('data.lines[0].quantity');
    expect(shown.payload).toMatchObject({
      encoding: 'json',
      value: {
        orderId: 'a2',
        data: { customerId: '[redacted]', shippingAddress: '[redacted]', lines: [{ sku: 'SKU-1', quantity: 0 }] },
      },
      redacted: ['customerId', 'shippingAddress'],
    });
    expect(out.stdout).toContain('values of customerId, shippingAddress redacted (--reveal shows them)');
    expect(out.stdout).toContain('dlq-error-class');
    expect(out.stdout).not.toMatch(/cust-secret-a2|Lovelace|St James/);

    const revealed = memoryOutput();
    await dlqShow({ config: s.config, out: revealed }, { position: pos(poisonAt.a2), reveal: true });
    expect(revealed.stdout).toContain('cust-secret-a2');
    expect(revealed.stdout).toContain('Ada Lovelace');

    const custom = await dlqShow(ctx(), { position: pos(poisonAt.a2), redactFields: ['orderId', 'street'] });
    expect(custom.payload).toMatchObject({
      value: {
        orderId: '[redacted]',
        data: { customerId: 'cust-secret-a2', shippingAddress: { name: 'Ada Lovelace', street: '[redacted]' } },
      },
    });

    const junk = await dlqShow(ctx(), { position: pos(poisonAt.notJson) });
    expect(junk.payload).toEqual({
      encoding: 'bytes',
      size: 23,
      preview: '{\\"eventId\\": \\"abc\\", oops',
      truncated: false,
    });
    expect(junk.key).toBe('poison-not-json');
    expect(junk.headers.note).toBe('not JSON');

    const missing = memoryOutput();
    expect(await runCli(['dlq', 'show', '0:99'], { out: missing, config: s.config })).toBe(1);
    expect(missing.stderr).toContain(`no record at 0:99: partition 0 of ${s.config.DLQ_TOPIC} holds offsets 0–6`);
  });

  it('a dry-run redrive says what it would send and sends nothing', async () => {
    const before = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    const out = memoryOutput();
    const malformed = await dlqRedrive(
      { config: s.config, out },
      { filter: { errorClass: 'MalformedEventError' }, dryRun: true },
    );
    expect(malformed.selected.map((r) => r.position)).toEqual(['0:3', '0:4', '0:5', '0:6']);
    expect(malformed.sent).toEqual([]);
    // re-validated with the bridge's parser: all four are still malformed, so they would be refused, naming why
    expect(malformed.refused.map((r) => r.position)).toEqual(['0:3', '0:4', '0:5', '0:6']);
    expect(malformed.refused.find((r) => r.position === poisonAt.a2)).toMatchObject({
      field: 'data.lines[0].quantity',
    });
    expect(out.lines().find((l) => l.startsWith(`would refuse ${poisonAt.notJson}: `))).toMatch(
      /^would refuse 0:\d: still malformed, the bridge would dead-letter it again: record value is not JSON .*; not sent \(--force sends it anyway\)$/,
    );
    expect(out.lines().find((l) => l.startsWith(`would refuse ${poisonAt.a1}: `))).toContain(
      'field eventId: is required; not sent',
    );
    expect(out.lines().at(-1)).toBe(
      `dry run: 0 dead letter(s) would be redriven to ${s.config.ORDERS_TOPIC} at ≤ 10/s; 4 refused as still malformed (--force sends them anyway); nothing was sent`,
    );
    const forced = memoryOutput();
    expect(
      (
        await dlqRedrive(
          { config: s.config, out: forced },
          { filter: { errorClass: 'MalformedEventError' }, dryRun: true, force: true },
        )
      ).planned,
    ).toHaveLength(4);
    expect(forced.lines().find((l) => l.startsWith(`would redrive ${poisonAt.notJson} `))).toMatch(
      new RegExp(
        `^would redrive ${poisonAt.notJson} → \\S+  key=poison-not-json event=- tenant=- error=MalformedEventError  forced: still malformed \\(record value is not JSON`,
      ),
    );
    expect(forced.lines().at(-1)).toContain('dry run: 4 dead letter(s) would be redriven');
    expect(forced.lines().at(-1)).toContain('4 forced though malformed');
    const all = await dlqRedrive(ctx(), { all: true, dryRun: true });
    expect(all.selected).toHaveLength(7);
    expect(all.planned.map((p) => p.position)).toEqual(['0:0', '0:1', '0:2']);
    expect(await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).toEqual(before);
  });

  it('redriving the same dead letter twice fulfils the order once', async () => {
    const order = orderWorkflowId(tenantRedrive, 'redrive-1');
    const first = await dlqRedrive(ctx(), { ids: [{ partition: 0, offset: 2n }], rate: 5 });
    expect(first.sent).toHaveLength(1);
    await waitFor(
      'the redriven order to ship',
      async () => (await s.row(tenantRedrive, 'redrive-1'))?.status === 'shipped',
    );
    await waitFor('the redrive committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    const shipped = await s.row(tenantRedrive, 'redrive-1');

    // A fresh instance has no bridge-side dedupe hint: the second copy must be absorbed downstream — the order's run has
    // closed (it shipped), so by the store, through the bridge's late path.
    await app.stop();
    app = await s.startInstance();
    // The redrive log remembers the first redrive: asked again, the run says so and sends nothing…
    const before = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    const repeat = memoryOutput();
    expect(await runCli(['dlq', 'redrive', '--id', '0:2', '--rate', '5'], { out: repeat, config: s.config })).toBe(0);
    expect(repeat.lines()).toEqual([
      expect.stringMatching(
        new RegExp(
          `^skipped 0:2: already redriven at \\S+ by \\S+ → ${s.config.ORDERS_TOPIC.replace(/\./g, '\\.')} ${first.sent[0]!.to}; not sent again \\(--again sends it again\\)$`,
        ),
      ),
      `redrove 0 dead letter(s) to ${s.config.ORDERS_TOPIC}; 1 skipped as already redriven (--again sends it again)`,
    ]);
    expect(await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).toEqual(before);
    // …and --again sends it once more
    const second = memoryOutput();
    expect(
      await runCli(['dlq', 'redrive', '--id', '0:2', '--rate', '5', '--again', '--operator', 'it-again'], {
        out: second,
        config: s.config,
      }),
    ).toBe(0);
    expect(second.stdout).toMatch(/^redriven 0:2 → \S+ \d+:\d+ {2}key=.*redrive-1 event=placed-/m);
    expect(second.lines().at(-1)).toMatch(/; duplicates are absorbed downstream by event id$/);
    expect(auditLines(second.stderr)).toMatchObject([
      {
        audit: 'dlq redrive',
        operator: 'it-again',
        dlqTopic: s.config.DLQ_TOPIC,
        dryRun: false,
        selection: { ids: ['0:2'] },
        again: true,
        outcome: { selected: 1, sent: 1, refused: 0 },
      },
    ]);
    const redriveLog = await readRedriveLog(s.kafka, `${s.config.DLQ_TOPIC}.redrives`);
    expect([...redriveLog.values()]).toMatchObject([
      {
        dlqPosition: '0:2',
        operator: 'it-again',
        again: true,
        verdict: 'order-event',
        forced: false,
        origin: `${s.config.ORDERS_TOPIC} 1:100`,
      },
    ]);
    await waitFor(
      'the store to recognise the second copy as a duplicate',
      async () => (await counter(app, 'fulfilment_duplicates_suppressed_total', { layer: 'store' })) >= 1,
    );
    await waitFor('the second redrive committed', () =>
      caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
    );

    expect(await app.client.workflow.getHandle(order).query(orderStatusQuery)).toMatchObject({
      status: 'shipped',
      appliedEvents: 1,
    });
    expect(await s.row(tenantRedrive, 'redrive-1')).toEqual(shipped);
    expect(await s.shipments(tenantRedrive)).toHaveLength(1);

    // What went back to the orders topic: original key, value and headers, none of the DLQ's dlq-* headers, plus
    // its DLQ position and its history for the bridge.
    const copies = (await s.readTopic(s.config.ORDERS_TOPIC, 6)).filter((r) => r.headers['redriven-from']);
    expect(copies).toHaveLength(2);
    for (const copy of copies) {
      expect(copy.key?.toString()).toBe(`${tenantRedrive}/redrive-1`);
      expect(copy.value).toEqual(Buffer.from(JSON.stringify(redriveTarget)));
      expect(copy.headers).toEqual({
        'correlation-id': 'corr-redrive-1',
        traceparent: `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`,
        'redriven-from': '0:2',
        'dlq-redrive-attempts': '1',
        'dlq-first-failure-at': twoDaysAgo,
        'dlq-redriven-from': '0:2',
      });
    }
  });

  it('the installed launcher runs the same commands (bin/fulfilment.mjs)', async () => {
    const run = (...argv: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['bin/fulfilment.mjs', ...argv], {
          env: s.env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('exit', (code) => resolve({ code, stdout, stderr }));
      });
    const listed = await run(
      'dlq',
      'list',
      '--json',
      '--error-class',
      'MalformedEventError',
      '--limit',
      '2',
      '--page',
      '2',
    );
    expect(listed.code).toBe(0);
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { position: string }).position),
    ).toEqual(['0:5', '0:6']); // page 2 of 0:3–0:6
    expect(listed.stderr).toContain('showing 3–4');

    const bad = await run('dlq', 'list', '--limit', 'lots');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("option '--limit <n>' argument 'lots' is invalid. expected a whole number ≥ 1");
  });
  it('folds copies of one origin into one dead letter, redrives that origin once, and skips a too-large dead letter', async () => {
    // A DLQ of its own, so `--all` covers only these records: two copies of one origin (as a bridge restarted
    // before committing writes them: same dlq-original-* headers, a later failure time), then a dead letter whose
    // value was omitted because the broker could not take it.
    copiesDlq = `${s.config.DLQ_TOPIC}.copies`;
    await s.admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: copiesDlq, numPartitions: 1, replicationFactor: 1 }],
    });
    const config = { ...s.config, DLQ_TOPIC: copiesDlq };
    tenantDup = s.tenant('dup');
    const dup = events.placed(tenantDup, 'dup-1');
    const origin = `${s.config.ORDERS_TOPIC} 2:7`;
    const copy = (failedAt: string) => ({
      key: `${tenantDup}/dup-1`,
      value: JSON.stringify(dup),
      partition: 0,
      headers: dlqHeaders(
        failedAt,
        'EventRejectedByTemporalError',
        tenantDup!,
        dup.eventId,
        'Temporal rejected the event: namespace misconfigured',
        '2:7',
      ),
    });
    const firstFailure = new Date(Date.now() - 60_000).toISOString();
    await exact.send({ topic: copiesDlq, acks: -1, messages: [copy(firstFailure)] });
    await exact.send({ topic: copiesDlq, acks: -1, messages: [copy(new Date().toISOString())] });
    const big = Buffer.alloc(2_000_000, 'x');
    const sha = createHash('sha256').update(big).digest('hex');
    const now = new Date();
    const tooLarge = reducedDeadLetterMessage(
      {
        key: `${tenantDup}/big-1`,
        value: big,
        origin: { topic: s.config.ORDERS_TOPIC, partition: 0, offset: '55' },
        group: s.config.CONSUMER_GROUP,
        error: { name: 'MalformedEventError', message: 'record value is 2000000 bytes' },
        attempts: 1,
        firstFailureAt: now,
        lastFailureAt: now,
        stage: 'edge',
        ids: { tenantId: tenantDup },
      },
      true,
    );
    await exact.send({ topic: copiesDlq, acks: -1, messages: [{ ...tooLarge, partition: 0 }] });

    // listed once, with copies 2 and where the other copy is
    const out = memoryOutput();
    const listed = await dlqList({ config, out });
    expect(listed).toMatchObject({ total: 2, deadLetters: 2, scanned: 3, folded: 1 });
    expect(listed.records).toMatchObject([
      {
        position: '0:0',
        copies: 2,
        copyPositions: ['0:1'],
        tenantId: tenantDup,
        eventId: dup.eventId,
        originalPosition: '2:7',
        failedAt: firstFailure,
      },
      { position: '0:2', copies: 1, copyPositions: [], errorClass: 'MalformedEventError' },
    ]);
    expect(out.lines()[1]).toMatch(/^0:0\s+2\s+\S+\s+EventRejectedByTemporalError\s/);
    expect(out.lines()[2]).toMatch(/^0:2\s+1\s+/);
    expect(out.lines().at(-1)).toBe(
      `2 of 2 dead letters in ${copiesDlq} match (no filter), 1 duplicate copy folded; showing 1–2`,
    );
    const json = memoryOutput();
    await dlqList({ config, out: json }, { json: true, filter: { errorClass: 'EventRejectedByTemporalError' } });
    expect(json.lines().map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { position: '0:0', copies: 2, copyPositions: ['0:1'] },
    ]);
    expect(json.stderr).toContain(
      `1 of 2 dead letters in ${copiesDlq} match (--error-class EventRejectedByTemporalError), 1 duplicate copy folded; showing 1–1`,
    );
    // a filter that only the later copy matches still finds the dead letter
    expect(
      (
        await dlqList({ config, out: memoryOutput() }, { filter: { since: new Date(Date.parse(firstFailure) + 1) } })
      ).records.map((r) => r.position),
    ).toEqual(['0:0', '0:2']);

    // either copy can be shown, and names the other
    const second = memoryOutput();
    expect(await dlqShow({ config, out: second }, { position: pos('0:1') })).toMatchObject({
      position: '0:1',
      copies: 2,
      firstWritten: '0:0',
      copyPositions: ['0:0'],
    });
    expect(second.lines()[1]).toBe(
      `copies   2 of origin ${origin}: 0:0 (first written: list and redrive use it), 0:1 (this one)`,
    );
    expect(await dlqShow({ config, out: memoryOutput() }, { position: pos('0:0') })).toMatchObject({
      copies: 2,
      firstWritten: '0:0',
      copyPositions: ['0:1'],
    });
    const big2 = memoryOutput();
    expect(await dlqShow({ config, out: big2 }, { position: pos('0:2') })).toMatchObject({
      copies: 1,
      copyPositions: [],
    });
    expect(big2.stdout).not.toContain('copies   ');
    expect(big2.stdout).toContain(
      `payload  not in the DLQ: the original value was too large to keep (2000000 bytes, SHA-256 ${sha}); dlq redrive skips this dead letter`,
    );

    // a filter or --id list that selects both copies chooses the origin once
    const byFilter = await dlqRedrive({ config, out: memoryOutput() }, { filter: { tenant: tenantDup }, dryRun: true });
    expect(byFilter.selected.map((r) => r.position)).toEqual(['0:0', '0:2']);
    expect(byFilter).toMatchObject({ folded: ['0:1'], skipped: [{ position: '0:2' }], sent: [] });
    const byIds = memoryOutput();
    expect(
      (await dlqRedrive({ config, out: byIds }, { ids: [pos('0:1'), pos('0:0')], dryRun: true })).selected.map(
        (r) => r.position,
      ),
    ).toEqual(['0:0']);
    expect(byIds.lines()).toEqual([
      `would redrive 0:0 → ${s.config.ORDERS_TOPIC}  key=${tenantDup}/dup-1 event=${dup.eventId} tenant=${tenantDup} error=EventRejectedByTemporalError  copy 0:1 not sent`,
      `dry run: 1 dead letter(s) would be redriven to ${s.config.ORDERS_TOPIC} at ≤ 10/s; 1 duplicate copy folded; nothing was sent`,
    ]);

    // the too-large dead letter alone: refused, counted as skipped, the run still succeeds
    const before = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    const skipMessage = `the DLQ holds no value for it: the original value was too large to keep (2000000 bytes, SHA-256 ${sha}); there is nothing to redrive`;
    const alone = memoryOutput();
    expect(await runCli(['dlq', 'redrive', '--id', '0:2'], { out: alone, config })).toBe(0);
    expect(alone.lines()).toEqual([
      `skipped 0:2: ${skipMessage}`,
      `redrove 0 dead letter(s) to ${s.config.ORDERS_TOPIC}; 1 skipped (no value in the DLQ)`,
    ]);
    expect(await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).toEqual(before);

    // --all: the origin is published once, the too-large one skipped with its size and SHA-256
    const all = memoryOutput();
    expect(await runCli(['dlq', 'redrive', '--all', '--rate', '20'], { out: all, config })).toBe(0);
    const lines = all.lines();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      new RegExp(
        `^redriven 0:0 → ${s.config.ORDERS_TOPIC.replace(/\./g, '\\.')} \\d+:\\d+  key=${tenantDup}/dup-1 .* copy 0:1 not sent$`,
      ),
    );
    expect(lines[1]).toBe(`skipped 0:2: ${skipMessage}`);
    expect(lines[2]).toBe(
      `redrove 1 dead letter(s) to ${s.config.ORDERS_TOPIC} at ≤ 20/s; 1 duplicate copy folded; 1 skipped (no value in the DLQ); duplicates are absorbed downstream by event id`,
    );
    const after = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    expect(written(after) - written(before)).toBe(1);
    await waitFor(
      'the redriven copy to be fulfilled',
      async () => (await s.row(tenantDup!, 'dup-1'))?.status === 'shipped',
    );
    expect(await s.shipments(tenantDup)).toHaveLength(1);
  });

  it('refuses to redrive a record that is still malformed; with --force sends it, and its new dead letter carries attempts 2 and the first failure', async () => {
    const at = pos(poisonAt.a1);
    const original = await dlqShow(ctx(), { position: at });
    const firstFailure = original.headers['dlq-first-failure-at']!;
    expect(original.headers['dlq-attempts']).toBe('1');

    // refused: not sent, exit 1, the reason names the field
    const before = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    const refused = memoryOutput();
    expect(
      await runCli(['dlq', 'redrive', '--id', poisonAt.a1, '--operator', 'it-refuse'], {
        out: refused,
        config: s.config,
      }),
    ).toBe(1);
    expect(refused.lines()).toEqual([
      `refused ${poisonAt.a1}: still malformed, the bridge would dead-letter it again: field eventId: is required; not sent (--force sends it anyway)`,
      `redrove 0 dead letter(s) to ${s.config.ORDERS_TOPIC}; 1 refused as still malformed (--force sends it anyway)`,
    ]);
    expect(refused.stderr).toContain(
      `error: 1 dead letter(s) refused as still malformed and not sent (${poisonAt.a1}): fix the producer and purge it, or send it anyway with --force`,
    );
    expect(auditLines(refused.stderr)).toMatchObject([
      {
        audit: 'dlq redrive',
        operator: 'it-refuse',
        selection: { ids: [poisonAt.a1] },
        force: false,
        outcome: { selected: 1, sent: 0, refused: 1 },
        refused: [poisonAt.a1],
      },
    ]);
    expect(await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).toEqual(before);
    expect(
      [...(await readRedriveLog(s.kafka, `${s.config.DLQ_TOPIC}.redrives`)).values()].map((e) => e.dlqPosition),
    ).not.toContain(poisonAt.a1);

    // --force: sent, said so, and dead-lettered again by the running bridge with its history
    const forced = memoryOutput();
    expect(await runCli(['dlq', 'redrive', '--id', poisonAt.a1, '--force'], { out: forced, config: s.config })).toBe(0);
    const [line, summary] = forced.lines();
    const m = new RegExp(
      `^redriven ${poisonAt.a1} → \\S+ (\\d+:\\d+)  key=${tenantA}/a1 event=- tenant=${tenantA} error=MalformedEventError  forced: still malformed \\(field eventId: is required\\)$`,
    ).exec(line ?? '');
    expect(m, line).not.toBeNull();
    expect(summary).toBe(
      `redrove 1 dead letter(s) to ${s.config.ORDERS_TOPIC} at ≤ 10/s; 1 forced though malformed: the bridge will dead-letter it again, attempts and first failure carried forward`,
    );
    expect(forced.stdout).not.toContain('absorbed downstream');
    const to = m![1]!;
    const again = await waitFor(
      'the forced record dead-lettered again',
      async () => (await list()).records.find((r) => r.originalPosition === to),
      60_000,
      500,
    );
    expect(again).toMatchObject({ errorClass: 'MalformedEventError', tenantId: tenantA, attempts: 2, copies: 1 });
    const shown = await dlqShow(ctx(), { position: pos(again.position) });
    expect(shown.headers).toMatchObject({
      'dlq-attempts': '2',
      'dlq-first-failure-at': firstFailure,
      'dlq-redriven-from': poisonAt.a1,
      'dlq-original-topic': s.config.ORDERS_TOPIC,
    });
    expect(Date.parse(shown.headers['dlq-last-failure-at'] as string)).toBeGreaterThan(
      Date.parse(firstFailure as string),
    );
    expect(shown.headers).not.toHaveProperty('dlq-redrive-attempts');
    console.log(
      `[dlq-cli] refused:\n${refused.stdout}${refused.stderr}[dlq-cli] forced:\n${forced.stdout}[dlq-cli] dead-lettered again as ${again.position}: ${JSON.stringify(again)}`,
    );
  });

  it('redrive --all twice sends each dead letter once: the second run skips what the redrive log says was redriven', async () => {
    const config = await ownDlq('again');
    const tenant = s.tenant('again');
    const valid = events.placed(tenant, 'again-1');
    const unknown = { ...events.placed(tenant, 'again-2'), type: 'orders.OrderRefunded' };
    const bad = { ...events.placed(tenant, 'again-3'), orderVersion: 0 };
    const failedAt = new Date(Date.now() - 3_600_000).toISOString();
    await exact.send({
      topic: config.DLQ_TOPIC,
      acks: -1,
      messages: [
        {
          key: `${tenant}/again-1`,
          value: JSON.stringify(valid),
          headers: dlqHeaders(
            failedAt,
            'EventRejectedByTemporalError',
            tenant,
            valid.eventId,
            'Temporal rejected the event: namespace misconfigured',
            '2:11',
          ),
        },
        {
          key: `${tenant}/again-2`,
          value: JSON.stringify(unknown),
          headers: dlqHeaders(
            failedAt,
            'EventRejectedByTemporalError',
            tenant,
            unknown.eventId,
            'Temporal rejected the event',
            '2:12',
          ),
        },
        {
          key: `${tenant}/again-3`,
          value: JSON.stringify(bad),
          headers: dlqHeaders(
            failedAt,
            'MalformedEventError',
            tenant,
            bad.eventId,
            'field orderVersion: expected an integer',
            '2:13',
          ),
        },
      ].map((m) => ({ ...m, partition: 0 })),
    });
    const target = s.config.ORDERS_TOPIC;
    const before = await s.admin.fetchTopicOffsets(target);

    const first = memoryOutput();
    expect(
      await runCli(['dlq', 'redrive', '--all', '--rate', '20', '--operator', 'it-all'], { out: first, config }),
    ).toBe(1); // 0:2 refused
    const lines = first.lines();
    expect(lines[0]).toMatch(
      new RegExp(
        `^redriven 0:0 → \\S+ \\d+:\\d+  key=${tenant}/again-1 event=${valid.eventId} tenant=${tenant} error=EventRejectedByTemporalError$`,
      ),
    );
    expect(lines[1]).toMatch(
      /^redriven 0:1 → \S+ \d+:\d+ {2}key=\S+ .* {2}type orders\.OrderRefunded is unknown to the bridge: it will be ignored$/,
    );
    expect(lines[2]).toBe(
      'refused 0:2: still malformed, the bridge would dead-letter it again: field orderVersion: expected an integer from 1 to 2147483647, got 0; not sent (--force sends it anyway)',
    );
    expect(lines[3]).toBe(
      `redrove 2 dead letter(s) to ${target} at ≤ 20/s; 1 refused as still malformed (--force sends it anyway); 1 of an unknown type: the bridge will ignore it; duplicates of the 1 valid event(s) are absorbed downstream by event id`,
    );
    expect(written(await s.admin.fetchTopicOffsets(target)) - written(before)).toBe(2);

    const second = memoryOutput();
    expect(
      await runCli(['dlq', 'redrive', '--all', '--rate', '20', '--operator', 'it-all'], { out: second, config }),
    ).toBe(1);
    expect(second.lines()).toEqual([
      expect.stringMatching(
        /^skipped 0:0: already redriven at \S+ by it-all → \S+ \d+:\d+; not sent again \(--again sends it again\)$/,
      ),
      expect.stringMatching(/^skipped 0:1: already redriven at \S+ by it-all → /),
      lines[2],
      `redrove 0 dead letter(s) to ${target}; 2 skipped as already redriven (--again sends them again); 1 refused as still malformed (--force sends it anyway)`,
    ]);
    expect(auditLines(second.stderr)).toMatchObject([
      {
        audit: 'dlq redrive',
        operator: 'it-all',
        selection: { all: true },
        outcome: { selected: 3, sent: 0, alreadyRedriven: 2, refused: 1 },
      },
    ]);
    expect(written(await s.admin.fetchTopicOffsets(target)) - written(before)).toBe(2);

    // --again lifts the redrive log's skip (here as a dry run)
    const again = await dlqRedrive(
      { config, out: memoryOutput() },
      { all: true, again: true, dryRun: true, operator: 'it-all' },
    );
    expect(again).toMatchObject({
      alreadyRedriven: [],
      planned: [{ position: '0:0' }, { position: '0:1' }],
      refused: [{ position: '0:2', field: 'orderVersion' }],
    });
    const redriveLog = await readRedriveLog(s.kafka, `${config.DLQ_TOPIC}.redrives`);
    expect([...redriveLog.values()].map((e) => [e.dlqPosition, e.operator, e.verdict])).toEqual([
      ['0:0', 'it-all', 'order-event'],
      ['0:1', 'it-all', 'unknown-type'],
    ]);
    await waitFor(
      'the valid event to be fulfilled',
      async () => (await s.row(tenant, 'again-1'))?.status === 'shipped',
    );
    expect(await s.shipments(tenant)).toHaveLength(1);
    console.log(
      `[dlq-cli] redrive --all, first run:\n${first.stdout}[dlq-cli] second run:\n${second.stdout}${second.stderr}`,
    );
  });

  it('purge: a dry run reports the prefix written before the time and deletes nothing; --yes deletes it', async () => {
    const config = await ownDlq('purge', 2);
    const tenant = s.tenant('purge');
    const record = (n: number, errorClass: string, partition: number, origin = `0:${200 + n}`, timestamp?: number) => {
      const e = events.placed(tenant, `purge-${n}`);
      return {
        key: `${tenant}/purge-${n}`,
        value: JSON.stringify(e),
        partition,
        ...(timestamp ? { timestamp: String(timestamp) } : {}),
        headers: dlqHeaders(new Date().toISOString(), errorClass, tenant, e.eventId, `failure ${n}`, origin),
      };
    };
    // Old: 0:0–0:2 (0:2 a second copy of 0:1's origin) and 1:0. New: 0:3, 1:1, and 1:2 — stamped old, but behind 1:1.
    await exact.send({
      topic: config.DLQ_TOPIC,
      acks: -1,
      messages: [
        record(1, 'MalformedEventError', 0),
        record(2, 'EventRejectedByTemporalError', 0),
        record(2, 'EventRejectedByTemporalError', 0, '0:202'),
        record(3, 'MalformedEventError', 1),
      ],
    });
    await new Promise((r) => setTimeout(r, 100));
    const cut = new Date();
    await new Promise((r) => setTimeout(r, 100));
    await exact.send({
      topic: config.DLQ_TOPIC,
      acks: -1,
      messages: [record(4, 'MalformedEventError', 0), record(5, 'MalformedEventError', 1)],
    });
    await exact.send({
      topic: config.DLQ_TOPIC,
      acks: -1,
      messages: [record(6, 'MalformedEventError', 1, '0:206', cut.getTime() - 60_000)],
    });
    // one of the old ones was redriven: its redrive log entry goes with it
    expect(
      (await dlqRedrive({ config, out: memoryOutput() }, { ids: [pos('0:1')], operator: 'it-purge' })).sent,
    ).toHaveLength(1);
    const offsets = async () =>
      (await s.admin.fetchTopicOffsets(config.DLQ_TOPIC))
        .sort((a, b) => a.partition - b.partition)
        .map((o) => [o.partition, o.low, o.high]);
    expect(await offsets()).toEqual([
      [0, '0', '4'],
      [1, '0', '3'],
    ]);

    const dry = memoryOutput();
    expect(
      await runCli(['dlq', 'purge', '--before', cut.toISOString(), '--operator', 'it-purge'], { out: dry, config }),
    ).toBe(0);
    const row = (label: string, value: string) => `  ${label.padEnd('EventRejectedByTemporalError'.length)}  ${value}`;
    const instant = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
    const [oldest, newest] = [2, 3].map((i) => dry.lines()[i]?.trim().split(/\s+/).at(-1) ?? '');
    expect(oldest).toMatch(instant);
    expect(newest).toMatch(instant);
    expect(Date.parse(newest!)).toBeLessThan(cut.getTime());
    expect(dry.lines()).toEqual([
      `would purge 4 record(s) of ${config.DLQ_TOPIC} written before ${cut.toISOString()}: 0:[0,3) 1:[0,1)`,
      row('dead letters', '3 (1 duplicate copy folded)'),
      row('oldest written', oldest!),
      row('newest written', newest!),
      row('EventRejectedByTemporalError', '2'),
      row('MalformedEventError', '2'),
      row('never redriven', '2 of the 3 dead letters'),
      row(
        'kept',
        '3 (from the first record written at or after the time on; 1 of them written before it: Kafka deletes only a prefix of a partition)',
      ),
      row('redrive log', '1 entry of purged dead letters would be removed'),
      'dry run: nothing was deleted; add --yes to delete these records',
    ]);
    expect(auditLines(dry.stderr)).toMatchObject([
      {
        audit: 'dlq purge',
        operator: 'it-purge',
        dryRun: true,
        selection: { before: cut.toISOString() },
        ranges: '0:[0,3) 1:[0,1)',
        outcome: { records: 4, deadLetters: 3, kept: 3, deleted: false },
      },
    ]);
    expect(await offsets()).toEqual([
      [0, '0', '4'],
      [1, '0', '3'],
    ]);
    expect((await readRedriveLog(s.kafka, `${config.DLQ_TOPIC}.redrives`)).size).toBe(1);

    const real = memoryOutput();
    const result = await dlqPurge({ config, out: real }, { before: cut, yes: true, operator: 'it-purge' });
    expect(result).toMatchObject({
      dryRun: false,
      records: 4,
      deadLetters: 3,
      byErrorClass: { EventRejectedByTemporalError: 2, MalformedEventError: 2 },
      kept: 3,
      keptOlder: 1,
      neverRedriven: 2,
      redriveLogForgotten: 1,
      lowAfter: { 0: '3', 1: '1' },
    });
    expect(real.lines()[0]).toBe(
      `purged 4 record(s) of ${config.DLQ_TOPIC} written before ${cut.toISOString()}: 0:[0,3) 1:[0,1); partition 0 now starts at offset 3, partition 1 now starts at offset 1`,
    );
    expect(real.lines().at(-1)).toBe('deleted 4 record(s) for good');
    expect(auditLines(real.stderr)).toMatchObject([
      { audit: 'dlq purge', dryRun: false, outcome: { records: 4, deleted: true, redriveLogForgotten: 1 } },
    ]);
    expect(await offsets()).toEqual([
      [0, '3', '4'],
      [1, '1', '3'],
    ]);
    expect((await dlqList({ config, out: memoryOutput() })).records.map((r) => r.position)).toEqual([
      '0:3',
      '1:1',
      '1:2',
    ]);
    expect((await readRedriveLog(s.kafka, `${config.DLQ_TOPIC}.redrives`)).size).toBe(0);

    // nothing left before the time: a second purge says so
    const none = memoryOutput();
    expect(await runCli(['dlq', 'purge', '--before', cut.toISOString(), '--yes'], { out: none, config })).toBe(0);
    expect(none.lines()).toEqual([
      `nothing to purge: no partition of ${config.DLQ_TOPIC} starts with records written before ${cut.toISOString()} (1 record(s) written before it sit behind later ones: Kafka deletes only a prefix of a partition)`,
    ]);
    console.log(
      `[dlq-cli] purge dry run:\n${dry.stdout}${dry.stderr}[dlq-cli] purge --yes:\n${real.stdout}${real.stderr}[dlq-cli] again:\n${none.stdout}`,
    );
  });
});
