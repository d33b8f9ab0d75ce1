/**
 * What `tenant show` is asked, and its check for callers that skip the command line (the parser, orderArg.tenant, checks
 * the same before anything is loaded).
 */
import { ID_PATTERN } from '../../vocabulary/order.js';
import { UsageError } from '../cli-errors.js';
import { TENANT_EXPECTED } from '../order/options.js';

/** How long `tenant show` waits for each source by default, seconds. */
export const DEFAULT_TENANT_SHOW_TIMEOUT_SECONDS = 15;

export interface TenantShowOptions {
  tenantId: string;
  /** How long to wait for each source, seconds. Default DEFAULT_TENANT_SHOW_TIMEOUT_SECONDS. */
  timeoutSeconds?: number;
  json?: boolean;
}

/** Throws UsageError naming the argument or option that is wrong and what was expected. */
export function checkTenantShowOptions(opts: TenantShowOptions): void {
  if (typeof opts.tenantId !== 'string' || !ID_PATTERN.test(opts.tenantId))
    throw new UsageError(`tenant show: <tenant>: expected ${TENANT_EXPECTED}, got ${JSON.stringify(opts.tenantId)}`);
  const t = opts.timeoutSeconds;
  if (t !== undefined && !(Number.isSafeInteger(t) && t >= 1))
    throw new UsageError(`tenant show: --timeout: expected a whole number of seconds ≥ 1, got ${t}`);
}
