/**
 * Shared by the tests of the deployment artefacts (docker-compose.yml, deploy/kubernetes/): is an environment
 * variable one the service knows, and is its value one src/base/config.ts accepts.
 */
import { configSchema, isTemporalEnvconfigVariable } from '../../src/base/config.js';

/** Schemas by variable name, as src/base/config.ts validates them. */
const schemas: Record<string, { safeParse(value: unknown): { success: boolean } } | undefined> = configSchema;

/** A value naming a file inside the container (a certificate, a key, a module): its existence is the pod's business. */
const namesAFile = (name: string) => /_(FILE|PATH|PROVIDER)$/.test(name);

/**
 * Problems of one environment: names that are not variables of src/base/config.ts (its schema, or the Temporal
 * variables it reads through envconfig), and values it rejects. `values: false` checks names only (a secret's
 * placeholders).
 */
export function envProblems(
  where: string,
  env: Record<string, string | undefined>,
  opts: { values?: boolean } = {},
): string[] {
  return Object.entries(env).flatMap(([name, value]) => {
    const schema = schemas[name];
    if (!schema)
      return isTemporalEnvconfigVariable(name) ? [] : [`${where}: ${name} is not a variable of src/base/config.ts`];
    if (value === undefined) return [`${where}: ${name} has no value`];
    if (opts.values === false || namesAFile(name)) return [];
    return schema.safeParse(value).success
      ? []
      : [`${where}: ${name}=${JSON.stringify(value)} is rejected by src/base/config.ts`];
  });
}

/** SHUTDOWN_DEADLINE_MS as the service reads it from `env` (its default when unset). */
export function shutdownDeadlineMs(env: Record<string, string | undefined>): number {
  return configSchema.SHUTDOWN_DEADLINE_MS.parse(env.SHUTDOWN_DEADLINE_MS);
}
