/**
 * `fulfilment codec-server`: serves the codec endpoint (src/adapters/codec/codec-server.ts) on
 * CODEC_SERVER_HOST:CODEC_SERVER_PORT with the configured keys, until interrupted. Refuses to start without keys or
 * without a token.
 */
import { readFileSync } from 'node:fs';
import { startCodecServer, type CodecServer } from '../../adapters/codec/codec-server.js';
import type { CliContext } from '../context.js';
import { UsageError } from '../cli-errors.js';
import { eprintln, println } from '../output.js';

export interface CodecServerCommandOptions {
  /** Overrides CODEC_SERVER_PORT. */
  port?: number;
  /** Called once it listens (tests use it to learn the port). */
  onListening?: (server: CodecServer) => void;
}

/** The token from CODEC_SERVER_TOKEN or the file CODEC_SERVER_TOKEN_FILE (one trailing newline ignored). */
function codecToken(ctx: CliContext): string {
  const { config } = ctx;
  if (config.CODEC_SERVER_TOKEN !== undefined) return config.CODEC_SERVER_TOKEN;
  if (config.CODEC_SERVER_TOKEN_FILE !== undefined) return readFileSync(config.CODEC_SERVER_TOKEN_FILE, 'utf8').trim();
  throw new UsageError(
    'the codec server needs a bearer token: set CODEC_SERVER_TOKEN or CODEC_SERVER_TOKEN_FILE (e.g. openssl rand -hex 32)',
  );
}

export async function codecServerCommand(ctx: CliContext, opts: CodecServerCommandOptions = {}): Promise<void> {
  const { config, out } = ctx;
  const keys = config.payloadEncryption;
  if (!keys)
    throw new UsageError(
      'the codec server needs the payload encryption keys: set PAYLOAD_ENCRYPTION_KEYS or PAYLOAD_ENCRYPTION_KEYS_FILE',
    );
  const token = codecToken(ctx);
  const corsOrigins = config.CODEC_SERVER_CORS_ORIGINS ?? [new URL(config.TEMPORAL_UI_URL).origin];
  const server = await startCodecServer({
    keys,
    token,
    corsOrigins,
    port: opts.port ?? config.CODEC_SERVER_PORT,
    host: config.CODEC_SERVER_HOST,
    logger: ctx.logger,
  });
  println(
    out,
    `codec server listening on ${server.url} (POST /decode, /encode; keys ${keys.describe()}; CORS origins ${corsOrigins.join(', ')})`,
  );
  opts.onListening?.(server);
  let onTerm: (() => void) | undefined;
  await new Promise<void>((resolve) => {
    if (ctx.signal?.aborted) return resolve();
    ctx.signal?.addEventListener('abort', () => resolve(), { once: true });
    process.once('SIGTERM', (onTerm = resolve));
  });
  if (onTerm) process.off('SIGTERM', onTerm);
  await server.close();
  eprintln(out, 'codec server stopped');
}
