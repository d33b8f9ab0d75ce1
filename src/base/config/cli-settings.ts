/** The operator's long-running commands: the lag exporter and the codec server. */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { nonEmpty, port, readableFile, type FieldsOf } from './fields.js';

export const cliSchema = {
  /** Port of `fulfilment lag-exporter`'s /metrics, /livez and /readyz (it listens on METRICS_HOST). */
  LAG_EXPORTER_PORT: port.default(9465),
  /** How often `fulfilment lag-exporter` reads the committed and end offsets, milliseconds (≥ 1000). */
  LAG_EXPORTER_INTERVAL_MS: z.coerce
    .number({ invalid_type_error: 'milliseconds ≥ 1000' })
    .int('milliseconds ≥ 1000')
    .min(1000, 'milliseconds ≥ 1000')
    .default(15_000),
  /** Port `fulfilment codec-server` listens on (0: any free port). */
  CODEC_SERVER_PORT: port.default(8888),
  /** Interface `fulfilment codec-server` listens on (0.0.0.0 in containers). */
  CODEC_SERVER_HOST: nonEmpty.default('127.0.0.1'),
  /** Bearer token every /encode and /decode request to the codec server must carry; or CODEC_SERVER_TOKEN_FILE. */
  CODEC_SERVER_TOKEN: z
    .string()
    .trim()
    .min(16, 'a token of at least 16 characters (e.g. openssl rand -hex 32)')
    .optional(),
  /** File holding the codec server's token (a mounted secret); one trailing newline is ignored. */
  CODEC_SERVER_TOKEN_FILE: readableFile()
    .refine(
      (path) => readFileSync(path, 'utf8').trim().length >= 16,
      'a file holding a token of at least 16 characters',
    )
    .optional(),
  /**
   * Comma-separated origins (scheme://host[:port]) whose pages may call the codec server (CORS): the Temporal Web
   * UI's. Default: the origin of TEMPORAL_UI_URL.
   */
  CODEC_SERVER_CORS_ORIGINS: nonEmpty
    .transform((v) =>
      v
        .split(',')
        .map((o) => o.trim())
        .filter((o) => o !== ''),
    )
    .pipe(
      z
        .array(
          z
            .string()
            .refine(
              isOrigin,
              'origins such as https://temporal-ui.example.com or http://127.0.0.1:8233 (scheme, host and port only, no path)',
            ),
        )
        .min(1),
    )
    .optional(),
};

/** What this concern's variables parse to: its checks below read these. */
type Config = FieldsOf<typeof cliSchema>;

/** An origin as browsers send it: scheme, host and port, nothing else. */
function isOrigin(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === value.replace(/\/$/, '');
  } catch {
    return false;
  }
}

/** The codec server's token comes from one place. */
export function codecServerProblems(c: Partial<Config>, invalid: ReadonlySet<string>): string[] {
  const token = c.CODEC_SERVER_TOKEN !== undefined || invalid.has('CODEC_SERVER_TOKEN');
  const tokenFile = c.CODEC_SERVER_TOKEN_FILE !== undefined || invalid.has('CODEC_SERVER_TOKEN_FILE');
  return token && tokenFile
    ? ['CODEC_SERVER_TOKEN and CODEC_SERVER_TOKEN_FILE are both set: expected one of them']
    : [];
}
