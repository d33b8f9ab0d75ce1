/** Which PostgreSQL errors are the event's fault (dead-lettered) and which may pass (left to the retry policy). */
import { describe, expect, it } from 'vitest';
import { PermanentError, UnstorableEventError } from '../../../../src/base/errors.js';
import { classifySqlError, isPermanentSqlError, sqlState } from '../../../../src/adapters/store/sql-errors.js';

/** An error shaped like node-postgres's DatabaseError: a message and the SQLSTATE in `code`. */
const pgError = (code: string, message = `pg error ${code}`) =>
  Object.assign(new Error(message), { code, severity: 'ERROR' });

const DATA_AND_INTEGRITY = [
  ['22001', 'string_data_right_truncation'],
  ['22003', 'numeric_value_out_of_range'],
  ['22007', 'invalid_datetime_format'],
  ['22008', 'datetime_field_overflow'],
  ['22021', 'character_not_in_repertoire (e.g. NUL in text)'],
  ['22P02', 'invalid_text_representation'],
  ['22P05', 'untranslatable_character (\\u0000 in jsonb)'],
  ['2200N', 'invalid_xml_content'],
  ['23000', 'integrity_constraint_violation'],
  ['23502', 'not_null_violation'],
  ['23503', 'foreign_key_violation'],
  ['23514', 'check_violation (e.g. the cancelled → shipped trigger)'],
  ['23P01', 'exclusion_violation'],
] as const;

const MAY_PASS = [
  ['23505', 'unique_violation: a concurrent insert of the same row'],
  ['57P01', 'admin_shutdown'],
  ['57P03', 'cannot_connect_now'],
  ['08006', 'connection_failure'],
  ['08003', 'connection_does_not_exist'],
  ['40001', 'serialization_failure'],
  ['40P01', 'deadlock_detected'],
  ['53300', 'too_many_connections'],
  ['55P03', 'lock_not_available'],
  ['57014', 'query_canceled (statement timeout)'],
  ['XX000', 'internal_error'],
  ['42P01', 'undefined_table'],
] as const;

describe('isPermanentSqlError', () => {
  it.each(DATA_AND_INTEGRITY)('SQLSTATE %s (%s) is the fault of the event: permanent', (code) => {
    expect(isPermanentSqlError(pgError(code))).toBe(true);
  });

  it.each(MAY_PASS)('SQLSTATE %s (%s) may pass: not permanent', (code) => {
    expect(isPermanentSqlError(pgError(code))).toBe(false);
  });

  it('a lost connection without any SQLSTATE is not permanent', () => {
    expect(isPermanentSqlError(new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(
      isPermanentSqlError(
        Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:55432'), { code: 'ECONNREFUSED', errno: -111 }),
      ),
    ).toBe(false);
    expect(isPermanentSqlError(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }))).toBe(false);
  });

  it('anything that does not look like a PostgreSQL error is not permanent', () => {
    for (const v of [
      undefined,
      null,
      0,
      '22001',
      {},
      { code: 22001 },
      { code: '2200' },
      { code: '220011' },
      { code: '22p02' },
    ]) {
      expect(isPermanentSqlError(v)).toBe(false);
    }
  });
});

describe('sqlState', () => {
  it('reads a five-character SQLSTATE from `code`, and nothing else', () => {
    expect(sqlState(pgError('22P02'))).toBe('22P02');
    expect(sqlState(pgError('40001'))).toBe('40001');
    expect(sqlState(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBeUndefined();
    expect(sqlState(new Error('x'))).toBeUndefined();
    expect(sqlState(null)).toBeUndefined();
  });
});

describe('classifySqlError', () => {
  it('wraps a permanent error in UnstorableEventError naming what was refused and the SQLSTATE, keeping the cause', () => {
    const original = pgError('22P05', 'unsupported Unicode escape sequence');
    const classified = classifySqlError(original, 'event evt-9 of acme/o-1');
    expect(classified).toBeInstanceOf(UnstorableEventError);
    expect(classified).toBeInstanceOf(PermanentError);
    const e = classified as UnstorableEventError;
    expect(e.name).toBe('UnstorableEventError');
    expect(e.message).toContain('event evt-9 of acme/o-1');
    expect(e.message).toContain('22P05');
    expect(e.message).toContain('unsupported Unicode escape sequence');
    expect(e.cause).toBe(original);
  });

  it.each(DATA_AND_INTEGRITY)('SQLSTATE %s (%s) becomes UnstorableEventError', (code) => {
    const classified = classifySqlError(pgError(code), 'fulfilment acme/o-1');
    expect(classified).toBeInstanceOf(UnstorableEventError);
    expect((classified as Error).message).toContain(code);
  });

  it.each(MAY_PASS)('SQLSTATE %s (%s) is returned unchanged, for the retry policy', (code) => {
    const original = pgError(code);
    expect(classifySqlError(original, 'fulfilment acme/o-1')).toBe(original);
  });

  it('returns errors without a SQLSTATE, and non-errors, unchanged', () => {
    const lost = new Error('Connection terminated unexpectedly');
    expect(classifySqlError(lost, 'x')).toBe(lost);
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(classifySqlError(refused, 'x')).toBe(refused);
    expect(classifySqlError('a string', 'x')).toBe('a string');
    expect(classifySqlError(undefined, 'x')).toBeUndefined();
  });
});
