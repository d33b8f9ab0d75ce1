/**
 * Tenants' shares of the service's capacity: the bridge's hand-over, Temporal's fair dispatch (each order's
 * `Priority.fairnessWeight`) and each worker's warehouse calls split capacity between the tenants that have work
 * waiting in proportion to these weights. Equal by default; a tenant alone gets all of it whatever its weight.
 */
import { z } from 'zod';
import { ID_PATTERN } from '../../vocabulary/order.js';

/** Temporal's bounds for a fairness weight. */
export const MIN_TENANT_WEIGHT = 0.001;
export const MAX_TENANT_WEIGHT = 1000;

const weightExpected = `a number from ${MIN_TENANT_WEIGHT} to ${MAX_TENANT_WEIGHT}`;
const weight = z.coerce
  .number({ invalid_type_error: weightExpected })
  .min(MIN_TENANT_WEIGHT, weightExpected)
  .max(MAX_TENANT_WEIGHT, weightExpected);

/** `tenant=weight` pairs, comma-separated (`acme=2,globex=0.5`); every tenant not named has TENANT_DEFAULT_WEIGHT. */
const weightList = z.string().transform((raw, ctx) => {
  const weights = new Map<string, number>();
  for (const item of raw.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const [tenant, value, ...rest] = item.split('=').map((s) => s.trim());
    const parsed = weight.safeParse(value);
    if (!tenant || !ID_PATTERN.test(tenant) || value === undefined || rest.length > 0 || !parsed.success) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `"${item.slice(0, 80)}": expected tenant=weight, a tenant id and ${weightExpected}`,
      });
      return z.NEVER;
    }
    if (weights.has(tenant)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `tenant "${tenant}" is given twice` });
      return z.NEVER;
    }
    weights.set(tenant, parsed.data);
  }
  return weights as ReadonlyMap<string, number>;
});

export const tenantsSchema = {
  /** Each named tenant's weight (`acme=2,globex=0.5`): its share of capacity while tenants compete, relative to others. */
  TENANT_WEIGHTS: weightList.optional(),
  /** The weight of every tenant TENANT_WEIGHTS does not name. */
  TENANT_DEFAULT_WEIGHT: weight.default(1),
};
