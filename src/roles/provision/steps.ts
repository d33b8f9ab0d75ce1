/** The steps of `fulfilment provision`, in the order they run (no heavy imports: the CLI checks `--only` with it). */
export const PROVISION_STEPS = ['kafka', 'temporal', 'postgres'] as const;
export type ProvisionStep = (typeof PROVISION_STEPS)[number];

/** `kafka,postgres` → the steps, each once, in run order; undefined when a name is not a step or none is given. */
export function parseProvisionSteps(value: string): ProvisionStep[] | undefined {
  const names = value.split(',').map((s) => s.trim().toLowerCase());
  if (names.length === 0 || names.some((n) => !(PROVISION_STEPS as readonly string[]).includes(n))) return undefined;
  return PROVISION_STEPS.filter((s) => names.includes(s));
}
