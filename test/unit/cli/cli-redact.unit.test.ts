import { describe, expect, it } from 'vitest';
import { redriveHeaders } from '../../../src/cli/dlq/redriven-record.js';
import { displayText, escapeBytes, Redactor, REDACTED, viewPayload } from '../../../src/cli/redact.js';

const placed = {
  eventId: 'e-1',
  tenantId: 't-1',
  orderId: 'o-1',
  data: {
    customerId: 'cust-42',
    lines: [{ sku: 'SKU-1', quantity: 1 }],
    shippingAddress: { name: 'Ada Lovelace', street: '12 St James Sq' },
    contact: { Email: 'ada@example.com', phone: '+44 20 0000' },
  },
};

describe('redaction of dead-lettered payloads', () => {
  it('replaces sensitive values at any depth, matching names case-insensitively, and says which it hid', () => {
    const view = viewPayload(Buffer.from(JSON.stringify(placed)), new Redactor(), false);
    expect(view).toMatchObject({
      encoding: 'json',
      value: {
        eventId: 'e-1',
        data: {
          customerId: REDACTED,
          lines: [{ sku: 'SKU-1', quantity: 1 }],
          shippingAddress: REDACTED,
          contact: { Email: REDACTED, phone: REDACTED },
        },
      },
      redacted: ['Email', 'customerId', 'phone', 'shippingAddress'],
    });
    expect(JSON.stringify(view)).not.toMatch(/cust-42|Lovelace|ada@|\+44/);
  });

  it('reveals everything only when asked, and redacts the configured fields instead of the defaults', () => {
    expect(viewPayload(Buffer.from(JSON.stringify(placed)), new Redactor(), true)).toMatchObject({
      value: placed,
      redacted: [],
    });
    const custom = viewPayload(Buffer.from(JSON.stringify(placed)), new Redactor(['orderId', 'street']), false);
    expect(custom).toMatchObject({
      value: {
        orderId: REDACTED,
        data: { customerId: 'cust-42', shippingAddress: { name: 'Ada Lovelace', street: REDACTED } },
      },
    });
  });

  it('shows a non-JSON payload as its size and an escaped prefix, all of it with reveal', () => {
    const junk = Buffer.concat([Buffer.from('\u0000junk"\\\n'), Buffer.alloc(100, 0xff)]);
    const view = viewPayload(junk, new Redactor(), false);
    expect(view).toMatchObject({ encoding: 'bytes', size: 108, truncated: true });
    expect(view.encoding === 'bytes' && view.preview.startsWith('\\x00junk\\"\\\\\\n\\xff')).toBe(true);
    expect(viewPayload(junk, new Redactor(), true)).toMatchObject({ truncated: false });
    expect(viewPayload(null, new Redactor(), false)).toEqual({ encoding: 'empty', size: 0 });
    expect(escapeBytes(Buffer.from('ok\t'))).toBe('ok\\t');
    expect(displayText(Buffer.from('field ≥ 1'))).toBe('field ≥ 1');
    expect(displayText(Buffer.from([0xc3, 0x28]))).toBe('\\xc3(');
  });

  it('hides the value the parser quoted in its error message when the field is sensitive', () => {
    const r = new Redactor();
    expect(r.errorMessage('field data.customerId: expected a string, got 12345')).toBe(
      `field data.customerId: expected a string, got ${REDACTED}`,
    );
    expect(r.errorMessage('field data.lines[0].quantity: expected an integer ≥ 1, got 0')).toBe(
      'field data.lines[0].quantity: expected an integer ≥ 1, got 0',
    );
    expect(r.errorMessage('record value is not JSON')).toBe('record value is not JSON');
  });
});

describe('redriven records', () => {
  it('carry the original headers without the dlq-* ones, where they came from, and their history', () => {
    const headers = redriveHeaders({
      partition: 0,
      offset: '7',
      timestamp: '0',
      key: null,
      value: null,
      headers: {
        'correlation-id': Buffer.from('c-1'),
        traceparent: Buffer.from('00-abc-def-01'),
        'dlq-error-class': Buffer.from('MalformedEventError'),
        'dlq-original-offset': Buffer.from('3'),
        'redriven-from': Buffer.from('0:2'),
      },
    });
    expect(Object.keys(headers).sort()).toEqual([
      'correlation-id',
      'dlq-first-failure-at',
      'dlq-redrive-attempts',
      'dlq-redriven-from',
      'redriven-from',
      'traceparent',
    ]);
    expect(headers['redriven-from']).toBe('0:7');
    // no dlq-attempts or failure times on the dead letter: one attempt, first failed when it was written
    expect(headers).toMatchObject({
      'dlq-redrive-attempts': '1',
      'dlq-first-failure-at': '1970-01-01T00:00:00.000Z',
      'dlq-redriven-from': '0:7',
    });
    expect(headers['correlation-id']).toEqual(Buffer.from('c-1'));
  });
});
