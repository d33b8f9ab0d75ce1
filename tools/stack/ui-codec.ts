/** The Web UI's codec server setting, shared by the dev server (services/temporal.ts) and the UI server (services/temporal-server.ts). */
import { StackError } from './log.js';

/**
 * STACK_UI_CODEC_ENDPOINT: the codec server the Web UI decodes payloads through (`fulfilment codec-server`, e.g.
 * http://127.0.0.1:8888), passed to the dev server as --ui-codec-endpoint and to the UI server's `codec` settings
 * (with cross-origin credentials, so the codec server's session cookie goes along). Unset: none configured.
 */
export function uiCodecEndpoint(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = (env.STACK_UI_CODEC_ENDPOINT ?? '').trim();
  if (value === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new StackError(
      `STACK_UI_CODEC_ENDPOINT must be an http:// or https:// URL of the codec server (e.g. http://127.0.0.1:8888), got ${JSON.stringify(value)}`,
    );
  }
  return value.replace(/\/+$/, '');
}
