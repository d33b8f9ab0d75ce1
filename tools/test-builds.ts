/**
 * What only some tests need and no registry ships ready to run, made ready beside the suite (`npm test` starts this
 * at once, niced, and runs those tests — the vitest project `needs-builds` — once it is done): the Temporal server
 * that the TLS Temporal runs, built with Go; kubeconform and kustomize, built with Go; promtool; the Kubernetes and
 * KEDA JSON schemas. Each is made once into the cache and skipped after that, so on a warm machine this ends at once.
 *
 *   npx tsx tools/test-builds.ts      # makes whatever is missing, one after another (2 cores), with progress
 */
import { kubeconformPath, kustomizePath, fmtSeconds, say, temporalServerPath } from './stack/index.js';
import { promtoolPath } from './deploy/promtool.js';
import { kubernetesSchemaDir } from './deploy/validate.js';

const STEPS: [string, () => Promise<string>][] = [
  ['the Temporal server (the TLS Temporal)', temporalServerPath],
  ['kubeconform', kubeconformPath],
  ['kustomize', kustomizePath],
  ['promtool', promtoolPath],
  ['the Kubernetes and KEDA schemas', kubernetesSchemaDir],
];

async function main(): Promise<void> {
  const t0 = Date.now();
  for (const [what, make] of STEPS) {
    const t = Date.now();
    const path = await make();
    say(`${what}: ${path} (${fmtSeconds(Date.now() - t)})`);
  }
  say(`ready in ${fmtSeconds(Date.now() - t0)}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).message ?? String(err)}\n`);
    process.exit(1);
  },
);
