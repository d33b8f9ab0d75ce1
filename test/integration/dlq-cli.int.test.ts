import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { dlqList, type DlqListOptions } from '../../src/cli/dlq/list.js';
import { dlqRedrive } from '../../src/cli/dlq/redrive.js';
import { dlqShow } from '../../src/cli/dlq/show.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import { reducedDeadLetterMessage } from '../../src/dlq/dead-letter.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { caughtUp, events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('fulfilment dlq: list, show, redrive', () => {
  let s: Scenario;
  let app: App;
  const ctx = () => ({ config: s.config, out: memoryOutput() });
  const list = async (opts: DlqListOptions = {}) => dlqList(ctx(), { limit: 100, ...opts });
  const positions = async (opts: DlqListOptions = {}) => (await list(opts)).records.map((r) => r.position);
  let tenantA: string, tenantB: string, tenantOld: string, tenantRedrive: string;
  /** The copies test's own DLQ topic and tenant (created by that test). */
  let copiesDlq: string | undefined;
  let tenantDup: string | undefined;
  let redriveTarget: ReturnType<typeof events.placed>;
  /** DLQ positions of the poison records. The bridge works a partition in lanes, so their DLQ order varies. */
  const poisonAt = { notJson: '', a1: '', a2: '', b1: '' };
  const pos = (p: string) => ({ partition: Number(p.split(':')[0]), offset: BigInt(p.split(':')[1]!) });

  /** The headers the bridge writes, for records an operator would find in the DLQ after some failure. */
  const dlqHeaders = (failedAt: string, errorClass: string, tenantId: string, eventId: string, message: string, origin = '1:100') => ({
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
    // Orders stay open long enough that a second delivery always reaches the workflow (terminated in afterAll).
    s = await scenario('dlq-cli', { ORDER_LINGER_SECONDS: '600' });
    app = await s.startInstance();
    [tenantA, tenantB, tenantOld, tenantRedrive] = [s.tenant('a'), s.tenant('b'), s.tenant('old'), s.tenant('redrive')];

    // DLQ 0:0–0:2, written as an operator would find them: two old Temporal refusals and a VALID event that was
    // dead-lettered because of a bug (so redriving it must fulfil the order — once).
    const old1 = events.placed(tenantOld, 'old-1');
    const old2 = events.placed(tenantOld, 'old-2');
    redriveTarget = events.placed(tenantRedrive, 'redrive-1', {
      data: { customerId: 'cust-secret-r1', lines: [{ sku: 'SKU-R', quantity: 2 }], shippingAddress: { name: 'Grace Hopper', city: 'Arlington' } },
    });
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString();
    await s.produce(
      [
        { key: `${tenantOld}/old-1`, value: old1, headers: dlqHeaders('2025-01-15T10:00:00.000Z', 'EventRejectedByTemporalError', tenantOld, old1.eventId, 'Temporal rejected the event: too large', '1:98') },
        { key: `${tenantOld}/old-2`, value: old2, headers: dlqHeaders('2025-06-15T10:00:00.000Z', 'EventRejectedByTemporalError', tenantOld, old2.eventId, 'Temporal rejected the event: too large', '1:99') },
        {
          key: `${tenantRedrive}/redrive-1`,
          value: redriveTarget,
          headers: {
            'correlation-id': 'corr-redrive-1',
            traceparent: `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`,
            ...dlqHeaders(twoDaysAgo, 'DependencyUnavailableError', tenantRedrive, redriveTarget.eventId, 'misclassified outage (bug 123)'),
          },
        },
      ].map((m) => ({ ...m, partition: 0 })),
      s.config.DLQ_TOPIC,
    );

    // DLQ 0:3–0:6: real poison records, dead-lettered by the running service.
    const a2 = events.placed(tenantA, 'a2', {
      data: { customerId: 'cust-secret-a2', lines: [{ sku: 'SKU-1', quantity: 0 }], shippingAddress: { name: 'Ada Lovelace', street: '12 St James Sq' } },
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
    await app?.client.workflow.getHandle(orderWorkflowId(tenantRedrive, 'redrive-1')).terminate('test over').catch(() => undefined);
    if (tenantDup) await app?.client.workflow.getHandle(orderWorkflowId(tenantDup, 'dup-1')).terminate('test over').catch(() => undefined);
    if (copiesDlq) await s?.admin.deleteTopics({ topics: [copiesDlq] }).catch(() => undefined);
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
    expect(lines.find((l) => l.startsWith(`${poisonAt.notJson} `))).toMatch(/^0:\d\s+1\s+\S+\s+MalformedEventError\s+-\s+-\s+record value is not JSON/);
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
      position: '0:2', errorClass: 'DependencyUnavailableError', tenantId: tenantRedrive, eventId: redriveTarget.eventId,
      originalTopic: s.config.ORDERS_TOPIC, originalPosition: '1:100', attempts: 1, copies: 1, copyPositions: [],
    });
    expect(json.stderr).toContain('showing 1–3; next page: --offset 3');
  });

  it('filters by error class, tenant and failure time', async () => {
    expect(await positions({ filter: { errorClass: 'malformedeventerror' } })).toEqual(['0:3', '0:4', '0:5', '0:6']);
    const tenantAAt = [poisonAt.a1, poisonAt.a2].sort();
    expect(await positions({ filter: { tenant: tenantA } })).toEqual(tenantAAt);
    expect(await positions({ filter: { tenant: tenantB } })).toEqual([poisonAt.b1]);
    expect(await positions({ filter: { tenant: 'nobody' } })).toEqual([]);
    expect(await positions({ filter: { since: new Date('2025-03-01T00:00:00Z'), until: new Date('2025-12-31T00:00:00Z') } })).toEqual(['0:1']);
    expect(await positions({ filter: { until: new Date('2025-03-01T00:00:00Z') } })).toEqual(['0:0']);
    expect(await positions({ filter: { since: new Date(Date.now() - 3_600_000) } })).toEqual(['0:3', '0:4', '0:5', '0:6']);
    expect(await positions({ filter: { errorClass: 'EventRejectedByTemporalError', since: new Date('2025-03-01T00:00:00Z') } })).toEqual(['0:1']);
    // the same filters through the command line, a relative time included
    const out = memoryOutput();
    expect(await runCli(['dlq', 'list', '--since', '1h', '--tenant', tenantA, '--json'], { out, config: s.config })).toBe(0);
    expect(out.lines().map((l) => (JSON.parse(l) as { position: string }).position)).toEqual(tenantAAt);
  });

  it('shows one record in full with personal data redacted, revealed only on request', async () => {
    const out = memoryOutput();
    const shown = await dlqShow({ config: s.config, out }, { position: pos(poisonAt.a2) });
    expect(shown.headers).toMatchObject({ 'dlq-error-class': 'MalformedEventError', 'dlq-tenant-id': tenantA, 'dlq-original-topic': s.config.ORDERS_TOPIC });
    expect(shown.headers['dlq-error-message']).toContain('data.lines[0].quantity');
    expect(shown.payload).toMatchObject({
      encoding: 'json',
      value: { orderId: 'a2', data: { customerId: '[redacted]', shippingAddress: '[redacted]', lines: [{ sku: 'SKU-1', quantity: 0 }] } },
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
    expect(custom.payload).toMatchObject({ value: { orderId: '[redacted]', data: { customerId: 'cust-secret-a2', shippingAddress: { name: 'Ada Lovelace', street: '[redacted]' } } } });

    const junk = await dlqShow(ctx(), { position: pos(poisonAt.notJson) });
    expect(junk.payload).toEqual({ encoding: 'bytes', size: 23, preview: '{\\"eventId\\": \\"abc\\", oops', truncated: false });
    expect(junk.key).toBe('poison-not-json');
    expect(junk.headers.note).toBe('not JSON');

    const missing = memoryOutput();
    expect(await runCli(['dlq', 'show', '0:99'], { out: missing, config: s.config })).toBe(1);
    expect(missing.stderr).toContain(`no record at 0:99: partition 0 of ${s.config.DLQ_TOPIC} holds offsets 0–6`);
  });

  it('a dry-run redrive says what it would send and sends nothing', async () => {
    const before = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    const out = memoryOutput();
    const malformed = await dlqRedrive({ config: s.config, out }, { filter: { errorClass: 'MalformedEventError' }, dryRun: true });
    expect(malformed.selected.map((r) => r.position)).toEqual(['0:3', '0:4', '0:5', '0:6']);
    expect(malformed.sent).toEqual([]);
    expect(out.lines()).toContain(`would redrive ${poisonAt.notJson} → ${s.config.ORDERS_TOPIC}  key=poison-not-json event=- tenant=- error=MalformedEventError`);
    expect(out.lines().at(-1)).toContain('dry run: 4 dead letter(s) would be redriven');
    expect((await dlqRedrive(ctx(), { all: true, dryRun: true })).selected).toHaveLength(7);
    expect(await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).toEqual(before);
  });

  it('redriving the same dead letter twice fulfils the order once', async () => {
    const order = orderWorkflowId(tenantRedrive, 'redrive-1');
    const first = await dlqRedrive(ctx(), { ids: [{ partition: 0, offset: 2n }], rate: 5 });
    expect(first.sent).toHaveLength(1);
    await waitFor('the redriven order to ship', async () => (await s.row(tenantRedrive, 'redrive-1'))?.status === 'shipped');
    await waitFor('the redrive committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    const shipped = await s.row(tenantRedrive, 'redrive-1');

    // A fresh instance has no bridge-side dedupe hint: the second copy must be absorbed by the workflow itself.
    await app.stop();
    app = await s.startInstance();
    const second = memoryOutput();
    expect(await runCli(['dlq', 'redrive', '--id', '0:2', '--rate', '5'], { out: second, config: s.config })).toBe(0);
    expect(second.stdout).toMatch(/^redriven 0:2 → \S+ \d+:\d+ {2}key=.*redrive-1 event=placed-/m);
    await waitFor('the workflow to recognise the second copy as a duplicate', async () =>
      (await app.client.workflow.getHandle(order).query(orderStatusQuery)).duplicatesSuppressed >= 1,
    );
    await waitFor('the second redrive committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));

    expect(await app.client.workflow.getHandle(order).query(orderStatusQuery)).toMatchObject({ status: 'shipped', appliedEvents: 1, duplicatesSuppressed: 1 });
    expect(await s.row(tenantRedrive, 'redrive-1')).toEqual(shipped);
    expect(await s.shipments(tenantRedrive)).toHaveLength(1);

    // What went back to the orders topic: original key, value and headers, no dlq-* headers, plus its origin.
    const copies = (await s.readTopic(s.config.ORDERS_TOPIC, 6)).filter((r) => r.headers['redriven-from']);
    expect(copies).toHaveLength(2);
    for (const copy of copies) {
      expect(copy.key?.toString()).toBe(`${tenantRedrive}/redrive-1`);
      expect(copy.value).toEqual(Buffer.from(JSON.stringify(redriveTarget)));
      expect(copy.headers).toEqual({ 'correlation-id': 'corr-redrive-1', traceparent: `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`, 'redriven-from': '0:2' });
    }
  });

  it('the installed launcher runs the same commands (bin/fulfilment.mjs)', async () => {
    const run = (...argv: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['bin/fulfilment.mjs', ...argv], { env: s.env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('exit', (code) => resolve({ code, stdout, stderr }));
      });
    const listed = await run('dlq', 'list', '--json', '--error-class', 'MalformedEventError', '--limit', '2', '--page', '2');
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { position: string }).position)).toEqual(['0:5', '0:6']); // page 2 of 0:3–0:6
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
    await s.admin.createTopics({ waitForLeaders: true, topics: [{ topic: copiesDlq, numPartitions: 1, replicationFactor: 1 }] });
    const config = { ...s.config, DLQ_TOPIC: copiesDlq };
    tenantDup = s.tenant('dup');
    const dup = events.placed(tenantDup, 'dup-1');
    const origin = `${s.config.ORDERS_TOPIC} 2:7`;
    const copy = (failedAt: string) => ({
      key: `${tenantDup}/dup-1`,
      value: JSON.stringify(dup),
      partition: 0,
      headers: dlqHeaders(failedAt, 'EventRejectedByTemporalError', tenantDup!, dup.eventId, 'Temporal rejected the event: namespace misconfigured', '2:7'),
    });
    const firstFailure = new Date(Date.now() - 60_000).toISOString();
    await s.producer.send({ topic: copiesDlq, acks: -1, messages: [copy(firstFailure)] });
    await s.producer.send({ topic: copiesDlq, acks: -1, messages: [copy(new Date().toISOString())] });
    const big = Buffer.alloc(2_000_000, 'x');
    const sha = createHash('sha256').update(big).digest('hex');
    const now = new Date();
    const tooLarge = reducedDeadLetterMessage(
      {
        key: `${tenantDup}/big-1`, value: big, origin: { topic: s.config.ORDERS_TOPIC, partition: 0, offset: '55' }, group: s.config.CONSUMER_GROUP,
        error: { name: 'MalformedEventError', message: 'record value is 2000000 bytes' }, attempts: 1, firstFailureAt: now, lastFailureAt: now, stage: 'edge', ids: { tenantId: tenantDup },
      },
      true,
    );
    await s.producer.send({ topic: copiesDlq, acks: -1, messages: [{ ...tooLarge, partition: 0 }] });

    // listed once, with copies 2 and where the other copy is
    const out = memoryOutput();
    const listed = await dlqList({ config, out });
    expect(listed).toMatchObject({ total: 2, deadLetters: 2, scanned: 3, folded: 1 });
    expect(listed.records).toMatchObject([
      { position: '0:0', copies: 2, copyPositions: ['0:1'], tenantId: tenantDup, eventId: dup.eventId, originalPosition: '2:7', failedAt: firstFailure },
      { position: '0:2', copies: 1, copyPositions: [], errorClass: 'MalformedEventError' },
    ]);
    expect(out.lines()[1]).toMatch(/^0:0\s+2\s+\S+\s+EventRejectedByTemporalError\s/);
    expect(out.lines()[2]).toMatch(/^0:2\s+1\s+/);
    expect(out.lines().at(-1)).toBe(`2 of 2 dead letters in ${copiesDlq} match (no filter), 1 duplicate copy folded; showing 1–2`);
    const json = memoryOutput();
    await dlqList({ config, out: json }, { json: true, filter: { errorClass: 'EventRejectedByTemporalError' } });
    expect(json.lines().map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([{ position: '0:0', copies: 2, copyPositions: ['0:1'] }]);
    expect(json.stderr).toContain(`1 of 2 dead letters in ${copiesDlq} match (--error-class EventRejectedByTemporalError), 1 duplicate copy folded; showing 1–1`);
    // a filter that only the later copy matches still finds the dead letter
    expect((await dlqList({ config, out: memoryOutput() }, { filter: { since: new Date(Date.parse(firstFailure) + 1) } })).records.map((r) => r.position)).toEqual(['0:0', '0:2']);

    // either copy can be shown, and names the other
    const second = memoryOutput();
    expect(await dlqShow({ config, out: second }, { position: pos('0:1') })).toMatchObject({ position: '0:1', copies: 2, firstWritten: '0:0', copyPositions: ['0:0'] });
    expect(second.lines()[1]).toBe(`copies   2 of origin ${origin}: 0:0 (first written: list and redrive use it), 0:1 (this one)`);
    expect(await dlqShow({ config, out: memoryOutput() }, { position: pos('0:0') })).toMatchObject({ copies: 2, firstWritten: '0:0', copyPositions: ['0:1'] });
    const big2 = memoryOutput();
    expect(await dlqShow({ config, out: big2 }, { position: pos('0:2') })).toMatchObject({ copies: 1, copyPositions: [] });
    expect(big2.stdout).not.toContain('copies   ');
    expect(big2.stdout).toContain(`payload  not in the DLQ: the original value was too large to keep (2000000 bytes, SHA-256 ${sha}); dlq redrive skips this dead letter`);

    // a filter or --id list that selects both copies chooses the origin once
    const byFilter = await dlqRedrive({ config, out: memoryOutput() }, { filter: { tenant: tenantDup }, dryRun: true });
    expect(byFilter.selected.map((r) => r.position)).toEqual(['0:0', '0:2']);
    expect(byFilter).toMatchObject({ folded: ['0:1'], skipped: [{ position: '0:2' }], sent: [] });
    const byIds = memoryOutput();
    expect((await dlqRedrive({ config, out: byIds }, { ids: [pos('0:1'), pos('0:0')], dryRun: true })).selected.map((r) => r.position)).toEqual(['0:0']);
    expect(byIds.lines()).toEqual([
      `would redrive 0:0 → ${s.config.ORDERS_TOPIC}  key=${tenantDup}/dup-1 event=${dup.eventId} tenant=${tenantDup} error=EventRejectedByTemporalError  copy 0:1 not sent`,
      `dry run: 1 dead letter(s) would be redriven to ${s.config.ORDERS_TOPIC} at ≤ 10/s; 1 duplicate copy folded; nothing was sent`,
    ]);

    // the too-large dead letter alone: refused, counted as skipped, the run still succeeds
    const before = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    const skipMessage = `the DLQ holds no value for it: the original value was too large to keep (2000000 bytes, SHA-256 ${sha}); there is nothing to redrive`;
    const alone = memoryOutput();
    expect(await runCli(['dlq', 'redrive', '--id', '0:2'], { out: alone, config })).toBe(0);
    expect(alone.lines()).toEqual([`skipped 0:2: ${skipMessage}`, `redrove 0 dead letter(s) to ${s.config.ORDERS_TOPIC}; 1 skipped (no value in the DLQ)`]);
    expect(await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).toEqual(before);

    // --all: the origin is published once, the too-large one skipped with its size and SHA-256
    const all = memoryOutput();
    expect(await runCli(['dlq', 'redrive', '--all', '--rate', '20'], { out: all, config })).toBe(0);
    const lines = all.lines();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(new RegExp(`^redriven 0:0 → ${s.config.ORDERS_TOPIC.replace(/\./g, '\\.')} \\d+:\\d+  key=${tenantDup}/dup-1 .* copy 0:1 not sent$`));
    expect(lines[1]).toBe(`skipped 0:2: ${skipMessage}`);
    expect(lines[2]).toBe(`redrove 1 dead letter(s) to ${s.config.ORDERS_TOPIC} at ≤ 20/s; 1 duplicate copy folded; 1 skipped (no value in the DLQ); duplicates are absorbed downstream by event id`);
    const after = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    const written = (offsets: { high: string }[]) => offsets.reduce((n, o) => n + Number(o.high), 0);
    expect(written(after) - written(before)).toBe(1);
    await waitFor('the redriven copy to be fulfilled', async () => (await s.row(tenantDup!, 'dup-1'))?.status === 'shipped');
    expect(await s.shipments(tenantDup)).toHaveLength(1);
  });
});
