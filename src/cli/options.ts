/**
 * Commander argument parsers. Each rejects bad input with InvalidArgumentError saying what was expected;
 * commander prefixes the option's name, and main.ts exits with code 2 — before anything is read or changed.
 */
import { InvalidArgumentError } from 'commander';
import { parseProvisionSteps, PROVISION_STEPS, type ProvisionStep } from '../roles/provision/steps.js';
import { parsePosition, POSITION_EXPECTED, type Position } from './position.js';
import { parseRangePoint, POINT_EXPECTED, type RangePoint } from './range-point.js';
import { parseTime, TIME_EXPECTED } from './time.js';

export function wholeNumber(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min) {
      throw new InvalidArgumentError(`expected a whole number ≥ ${min}.`);
    }
    return n;
  };
}

/** Events or records per second: a number > 0 and ≤ 100000 (decimals allowed, e.g. 0.5). */
export function rate(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 100_000) {
    throw new InvalidArgumentError(
      'expected a rate in records per second, a number > 0 and ≤ 100000 (e.g. 10 or 0.5).',
    );
  }
  return n;
}

export function time(value: string): Date {
  const t = parseTime(value);
  if (!t) throw new InvalidArgumentError(`expected ${TIME_EXPECTED}.`);
  return t;
}

export function position(value: string): Position {
  const p = parsePosition(value);
  if (!p) throw new InvalidArgumentError(`expected ${POSITION_EXPECTED}.`);
  return p;
}

/** A repeatable position option: `--id 0:1 --id 0:2` (also `--id 0:1,0:2`). */
export function positions(value: string, previous: Position[] = []): Position[] {
  const parts = value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length === 0) throw new InvalidArgumentError(`expected ${POSITION_EXPECTED}.`);
  return [...previous, ...parts.map(position)];
}

/** A comma-separated list of JSON field names. */
export function fieldList(value: string): string[] {
  const fields = value
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  if (fields.length === 0 || fields.some((f) => !/^[A-Za-z_$][\w$-]*$/.test(f))) {
    throw new InvalidArgumentError('expected a comma-separated list of field names such as customerId,email.');
  }
  return fields;
}

/** A non-empty name (consumer group, error class, tenant id). */
export function name(value: string): string {
  const v = value.trim();
  if (v === '') throw new InvalidArgumentError('expected a non-empty name.');
  return v;
}

/** Where a redelivery starts or stops (range-point.ts). */
export function rangePoint(value: string): RangePoint {
  const p = parseRangePoint(value);
  if (!p) throw new InvalidArgumentError(`expected ${POINT_EXPECTED}.`);
  return p;
}

/** `--only kafka,temporal,postgres`: some of provisioning's steps. */
export function provisionSteps(value: string): ProvisionStep[] {
  const steps = parseProvisionSteps(value);
  if (!steps) throw new InvalidArgumentError(`expected a comma-separated list of ${PROVISION_STEPS.join(', ')}.`);
  return steps;
}
