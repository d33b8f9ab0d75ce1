/**
 * The field types the configuration's schemas are written with, and how a variable's value may be shown in an error.
 * Every message says what was expected (a whole number ≥ 1, a URL starting with …, a readable PEM file …).
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { z } from 'zod';

export const port = z.coerce
  .number({ invalid_type_error: 'a port number 0–65535' })
  .int('a port number 0–65535')
  .min(0, 'a port number 0–65535')
  .max(65535, 'a port number 0–65535');
export const positiveInt = z.coerce
  .number({ invalid_type_error: 'a whole number ≥ 1' })
  .int('a whole number ≥ 1')
  .min(1, 'a whole number ≥ 1');
export const atLeastTwo = z.coerce
  .number({ invalid_type_error: 'a whole number ≥ 2' })
  .int('a whole number ≥ 2')
  .min(2, 'a whole number ≥ 2');
export const nonEmpty = z.string().trim().min(1);
/** A switch: true, false, 1 or 0, read as a boolean. */
export const booleanFlag = z
  .enum(['true', 'false', '1', '0'], { message: 'true, false, 1 or 0' })
  .transform((v) => v === 'true' || v === '1');

export const url = (protocols: string[]) =>
  nonEmpty.refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    `a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`,
  );

/** A readable PEM file holding at least one certificate. */
export const pemCertificateFile = nonEmpty.superRefine((path, ctx) => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: `a readable PEM file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    });
    return;
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: 'a PEM file holding a certificate (-----BEGIN CERTIFICATE-----)',
    });
});

/** A worker deployment's name or build id: what Temporal accepts in both, and no separator of the two. */
export const versionName = nonEmpty.regex(/^[A-Za-z0-9_-]{1,200}$/, 'letters, digits, - and _ (at most 200)');

export const hostPort = nonEmpty.regex(/^[^\s:,]+:\d{1,5}$/, 'host:port');

/** Why `path` cannot be read as a file, or undefined when it can. */
function unreadable(path: string): string | undefined {
  try {
    if (!statSync(path).isFile()) return `${path} is not a file`;
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `${path} does not exist`;
    if (code === 'EACCES' || code === 'EPERM') return `${path} is not readable by this process (${code})`;
    return `${path} cannot be read (${code ?? String(err)})`;
  }
}

/**
 * A path to a file this process can read; with `pem`, one holding at least one PEM block whose label matches (and
 * none whose label `refused` matches, which `refused.why` explains).
 */
export const readableFile = (pem?: { label: RegExp; what: string; refused?: { label: RegExp; why: string } }) =>
  nonEmpty.superRefine((path, ctx) => {
    const why = unreadable(path);
    if (why) return void ctx.addIssue({ code: z.ZodIssueCode.custom, message: `a readable file, but ${why}` });
    if (!pem) return;
    const text = readFileSync(path, 'utf8');
    const has = (label: RegExp) => new RegExp(`-----BEGIN ${label.source}-----`).test(text);
    if (pem.refused && has(pem.refused.label))
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${pem.what}, but ${path} ${pem.refused.why}` });
    else if (!has(pem.label))
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `a PEM file holding ${pem.what}, but ${path} has no "-----BEGIN ...-----" block of that kind`,
      });
  });
export const pemCertificates = readableFile({ label: /CERTIFICATE/, what: 'one or more certificates' });
export const pemPrivateKey = readableFile({
  label: /(?:RSA |EC )?PRIVATE KEY/,
  what: 'an unencrypted private key',
  refused: {
    label: /ENCRYPTED PRIVATE KEY/,
    why: 'is encrypted and no passphrase is taken (decrypt it: openssl pkey -in <file> -out <new file>)',
  },
});

/** `a, b or c`: the values a message lists as expected. */
export const orList = (values: readonly string[]) => `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;

/** Variables whose values are secrets: never repeated in an error message. */
export const SECRET_VARIABLES: ReadonlySet<string> = new Set([
  'KAFKA_SASL_PASSWORD',
  'PAYLOAD_ENCRYPTION_KEYS',
  'CODEC_SERVER_TOKEN',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
]);
/** Variables whose values are URLs that may carry a password: repeated with the password masked. */
const URL_WITH_PASSWORD: ReadonlySet<string> = new Set(['DATABASE_URL', 'DATABASE_MIGRATION_URL']);

/** A variable's value as an error message may repeat it. */
export function shown(name: string, raw: string | undefined): string {
  if (SECRET_VARIABLES.has(name)) return '(hidden)';
  if (raw !== undefined && URL_WITH_PASSWORD.has(name))
    return JSON.stringify(raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*:)[^@/?#]*@/i, '$1***@'));
  return JSON.stringify(raw);
}

const DURATION_UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** Milliseconds of a duration such as `90s`, `30m`, `1h` or `1d` (`0` is 0); NaN when it is none. */
export function durationMs(value: string): number {
  if (value.trim() === '0') return 0;
  const m = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  return m ? Number(m[1]) * DURATION_UNIT_MS[m[2] as keyof typeof DURATION_UNIT_MS] : Number.NaN;
}
export const duration = nonEmpty.refine((v) => {
  const ms = durationMs(v);
  return ms === 0 || ms >= 60_000;
}, 'a duration of at least 1m such as 30m, 1h or 1d, or 0');

/**
 * The values a concern's variables parse to (a schema of src/base/config/ → its fields): what that concern's own checks
 * read, so each concern's file needs nothing but itself (the whole Config, src/base/config.ts, is every concern's
 * together).
 */
export type FieldsOf<S extends Record<string, z.ZodType>> = { [K in keyof S]: z.output<S[K]> };
