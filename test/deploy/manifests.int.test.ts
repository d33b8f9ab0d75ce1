/**
 * The deployment artefacts against real schemas (tools/deploy/validate.ts): every manifest of deploy/kubernetes/,
 * and what `kustomize build` makes of the folder, with kubeconform -strict against the Kubernetes and KEDA schemas;
 * docker-compose.yml, interpolated as Compose does, against the compose-spec schema. Each validator is also shown a
 * deliberately broken copy, so a validator that accepted anything would fail here. Needs no stack: only Go, whose
 * module proxy serves kubeconform, kustomize and the schemas the first time (`npm test` builds them
 * beforehand; this file's setup does when they are missing).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  composeExampleEnv,
  composeSchemaProblems,
  kubeconform,
  kubernetesDir,
  kubernetesSchemaDir,
  kustomizeBuild,
  loadCompose,
  readEnvFile,
} from '../../tools/deploy/validate.js';
import { kubeconformPath, kustomizePath } from '../../tools/stack/index.js';

const scratch = mkdtempSync(join(tmpdir(), 'fulfilment-manifests-'));
const manifestFiles = [
  'build.yaml',
  'bridge.yaml',
  'lag-exporter.yaml',
  'worker.yaml',
  'configmap.yaml',
  'provision-job.yaml',
  'keda-auth.yaml',
  'namespace.yaml',
  'serviceaccount.yaml',
  'networkpolicy.yaml',
  'secret.example.yaml',
];
const documents = (text: string) => parseAllDocuments(text).filter((d) => d.contents !== null).length;

/** A copy of one manifest file with `from` replaced by `to` (which must occur), in the scratch folder. */
function broken(file: string, from: string | RegExp, to: string): string {
  const text = readFileSync(join(kubernetesDir, file), 'utf8');
  const changed = text.replace(from, to);
  expect(changed, `${String(from)} occurs in ${file}`).not.toBe(text);
  const out = join(scratch, `broken-${Math.random().toString(36).slice(2)}-${file}`);
  writeFileSync(out, changed);
  return out;
}

beforeAll(async () => {
  // First run on a machine: go install of both tools and the schema generation (about 2 minutes).
  await kubeconformPath();
  await kustomizePath();
  await kubernetesSchemaDir();
}, 900_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('deploy/kubernetes with kubeconform -strict', () => {
  it('accepts every manifest, each against a schema of its kind (none skipped)', async () => {
    const r = await kubeconform([kubernetesDir]);
    expect(r.problems).toEqual([]);
    expect(r.exitCode).toBe(0);
    const expected = manifestFiles.reduce((n, f) => n + documents(readFileSync(join(kubernetesDir, f), 'utf8')), 0);
    expect(r.summary).toEqual({ valid: expected, invalid: 0, errors: 0, skipped: 0 });
    expect(new Set(r.resources.map((x) => x.kind))).toEqual(
      new Set([
        'ConfigMap',
        'Deployment',
        'Job',
        'Namespace',
        'NetworkPolicy',
        'PodDisruptionBudget',
        'ScaledObject',
        'Secret',
        'Service',
        'ServiceAccount',
        'TriggerAuthentication',
      ]),
    );
  });

  it('accepts what kustomize builds: the namespace, the labels and the pinned image applied', async () => {
    const built = await kustomizeBuild();
    const text = readFileSync(built, 'utf8');
    const r = await kubeconform([built]).finally(() => rmSync(built, { force: true }));
    expect(r.problems).toEqual([]);
    expect(r.summary.invalid + r.summary.errors + r.summary.skipped).toBe(0);
    const docs = parseAllDocuments(text).map(
      (d) =>
        d.toJS() as {
          kind: string;
          metadata: { namespace?: string; labels?: Record<string, string> };
          spec?: { template?: { spec?: { containers: { image: string }[] } } };
        },
    );
    expect(docs.length).toBe(r.summary.valid);
    // The example Secret is not part of it.
    expect(docs.filter((d) => d.kind === 'Secret')).toEqual([]);
    for (const d of docs) {
      if (d.kind !== 'Namespace') expect(d.metadata.namespace).toBe('fulfilment');
      expect(d.metadata.labels?.['app.kubernetes.io/part-of']).toBe('fulfilment');
      for (const c of d.spec?.template?.spec?.containers ?? [])
        expect(c.image).toMatch(/^registry\.example\.com\/fulfilment:\d+\.\d+\.\d+$/);
    }
  });

  it('refuses a misspelt field, a wrong type, an unknown kind and a field in the wrong place', async () => {
    const cases = [
      {
        file: broken('bridge.yaml', /^ {2}replicas: 2$/m, '  replica: 2'),
        expect: /Deployment\/fulfilment-bridge: invalid: \/spec: additional properties? 'replica' not allowed/,
      },
      {
        file: broken('bridge.yaml', 'maxReplicaCount: 6', 'maxReplicaCount: "6"'),
        expect: /ScaledObject\/fulfilment-bridge: invalid: \/spec\/maxReplicaCount: got string, want integer/,
      },
      {
        file: broken('worker.yaml', 'kind: PodDisruptionBudget', 'kind: PodDisruptionBudgets'),
        expect: /PodDisruptionBudgets\/fulfilment-worker: error: could not find schema for PodDisruptionBudgets/,
      },
      {
        file: broken(
          'worker.yaml',
          '      terminationGracePeriodSeconds: 45',
          '      containers_: []\n      terminationGracePeriodSeconds: 45',
        ),
        expect:
          /Deployment\/fulfilment-worker-build: invalid: \/spec\/template\/spec: additional properties? 'containers_' not allowed/,
      },
    ];
    const r = await kubeconform(cases.map((c) => c.file));
    expect(r.exitCode).not.toBe(0);
    for (const c of cases)
      expect(
        r.problems.find((p) => p.includes(c.file.replace(/^.*\//, ''))),
        c.file,
      ).toMatch(c.expect);
  });
});

describe('docker-compose.yml against the compose-spec schema', () => {
  const filled = Object.fromEntries(
    Object.entries(readEnvFile(composeExampleEnv)).map(([k, v]) => [k, v || 'example-password']),
  );

  it('is valid as Compose sees it with example.env filled in', async () => {
    expect(await composeSchemaProblems(loadCompose(filled))).toEqual([]);
  });

  it('refuses an unknown service key and a wrong type', async () => {
    const doc = loadCompose(filled) as { services: Record<string, Record<string, unknown>> };
    (doc.services.worker as Record<string, unknown>).restart_policy = 'always';
    (doc.services.bridge as Record<string, unknown>).depends_on = 'provision';
    const problems = await composeSchemaProblems(doc);
    expect(problems.join('\n')).toMatch(
      /\/services\/worker: must NOT have unevaluated properties \{"unevaluatedProperty":"restart_policy"\}/,
    );
    expect(problems.join('\n')).toMatch(/\/services\/bridge\/depends_on: must be (array|object)/);
  });
});
