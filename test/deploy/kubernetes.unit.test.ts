/**
 * The rules of deploy/kubernetes/ that a schema cannot express (the schemas themselves are checked by kubeconform in
 * test/deploy/manifests.int.test.ts): bridges never outnumber the orders topic's partitions, every environment name
 * is a variable of src/base/config.ts, probes and ports agree with METRICS_PORT, the pods can stop within their grace
 * period, run as non-root on a read-only root filesystem, have resources and a disruption budget, the owner role
 * reaches the provisioning Job only, and the kustomization lists every resource.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { kubernetesDir } from '../../tools/deploy/validate.js';
import { envProblems, shutdownDeadlineMs } from '../support/deploy-env.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- manifests are loosely typed YAML, read field by field */
type Obj = Record<string, any>;

interface Manifest extends Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  file: string;
}

const files = readdirSync(kubernetesDir).filter((f) => /\.ya?ml$/.test(f));
const manifests: Manifest[] = files
  .filter((f) => f !== 'kustomization.yaml')
  .flatMap((file) =>
    parseAllDocuments(readFileSync(join(kubernetesDir, file), 'utf8')).map(
      (d) => ({ ...(d.toJS() as Obj), file }) as Manifest,
    ),
  );
const kustomization = parse(readFileSync(join(kubernetesDir, 'kustomization.yaml'), 'utf8')) as {
  resources?: string[];
  namespace?: string;
  images?: { name: string; newTag?: string; digest?: string }[];
};
const listed = new Set(kustomization.resources ?? []);

const find = (kind: string, name: string): Manifest | undefined =>
  manifests.find((m) => m.kind === kind && m.metadata.name === name);
const all = (kind: string) => manifests.filter((m) => m.kind === kind);
const deployments = all('Deployment');
const configMap = find('ConfigMap', 'fulfilment-config');
const config: Record<string, string> = configMap?.data ?? {};
const partitions = Number(config.ORDERS_TOPIC_PARTITIONS);
const secretKeys = (name: string): string[] =>
  Object.keys((find('Secret', name)?.stringData ?? find('Secret', name)?.data ?? {}) as Obj);

/** Pod templates of every workload, with what they belong to. */
const podTemplates = [...deployments, ...all('Job')].map((m) => ({
  owner: `${m.kind}/${m.metadata.name}`,
  manifest: m,
  pod: m.spec.template as Obj,
}));

/** The environment a container sees: its ConfigMaps' and Secrets' keys (values of ConfigMaps), then its own env. */
function containerEnv(container: Obj): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const from of (container.envFrom ?? []) as Obj[]) {
    if (from.configMapRef) Object.assign(env, find('ConfigMap', from.configMapRef.name)?.data ?? {});
    if (from.secretRef) for (const k of secretKeys(from.secretRef.name)) env[k] = 'from-secret';
  }
  for (const e of (container.env ?? []) as Obj[]) env[e.name] = e.value ?? 'from-reference';
  return env;
}

const selects = (selector: Obj | undefined, labels: Record<string, string> | undefined): boolean =>
  !!selector?.matchLabels &&
  Object.entries(selector.matchLabels as Record<string, string>).every(([k, v]) => labels?.[k] === v);

/** ScaledObjects and HPAs that set the replica count of a Deployment, with their ceiling. */
const scalersOf = (name: string) => [
  ...all('ScaledObject')
    .filter(
      (s) => s.spec.scaleTargetRef?.name === name && (s.spec.scaleTargetRef.kind ?? 'Deployment') === 'Deployment',
    )
    .map((s) => ({
      what: `ScaledObject/${s.metadata.name}`,
      max: Number(s.spec.maxReplicaCount ?? 100),
      min: Number(s.spec.minReplicaCount ?? 0),
      manifest: s,
    })),
  ...all('HorizontalPodAutoscaler')
    .filter((h) => h.spec.scaleTargetRef?.name === name)
    .map((h) => ({
      what: `HorizontalPodAutoscaler/${h.metadata.name}`,
      max: Number(h.spec.maxReplicas),
      min: Number(h.spec.minReplicas ?? 1),
      manifest: h,
    })),
];

describe('deploy/kubernetes', () => {
  it('has the objects of a deployment, and the kustomization lists every one but the example Secret', () => {
    const kinds = manifests.map((m) => `${m.kind}/${m.metadata.name}`).sort();
    expect(kinds).toEqual(
      expect.arrayContaining([
        'ConfigMap/fulfilment-build',
        'ConfigMap/fulfilment-config',
        'Deployment/fulfilment-bridge',
        'Deployment/fulfilment-lag-exporter',
        'Deployment/fulfilment-worker-build',
        'Job/fulfilment-provision',
        'PodDisruptionBudget/fulfilment-bridge',
        'PodDisruptionBudget/fulfilment-worker',
        'ScaledObject/fulfilment-bridge',
        'ScaledObject/fulfilment-worker-build',
        'Service/fulfilment-lag-exporter',
        'Secret/fulfilment-provision',
        'Secret/fulfilment-runtime',
      ]),
    );
    expect([...listed].sort()).toEqual(
      files.filter((f) => f !== 'kustomization.yaml' && f !== 'secret.example.yaml').sort(),
    );
    // Everything lives in the one namespace the kustomization sets.
    for (const m of manifests.filter((x) => x.kind !== 'Namespace'))
      expect(m.metadata.namespace, `${m.kind}/${m.metadata.name}`).toBe(kustomization.namespace);
    // The image is pinned where it is set (kustomize's images), and every pod runs that one image.
    expect(kustomization.images?.map((i) => i.name)).toEqual(['fulfilment']);
    expect(kustomization.images?.[0]?.newTag ?? kustomization.images?.[0]?.digest).toMatch(/\d+\.\d+|^sha256:/);
    for (const { owner, pod } of podTemplates)
      for (const c of pod.spec.containers as Obj[]) expect(c.image, owner).toBe('fulfilment');
  });

  it('keeps the bridge at or below the orders topic partitions, however it is scaled', () => {
    expect(Number.isInteger(partitions) && partitions > 0, 'ConfigMap sets ORDERS_TOPIC_PARTITIONS').toBe(true);
    const bridge = find('Deployment', 'fulfilment-bridge');
    expect(bridge?.spec.replicas).toBeLessThanOrEqual(partitions);
    const scalers = scalersOf('fulfilment-bridge');
    expect(scalers.length, 'the bridge has a scaler').toBeGreaterThan(0);
    for (const s of scalers) {
      expect(s.max, `${s.what} maxReplicaCount`).toBeLessThanOrEqual(partitions);
      expect(s.min, `${s.what} minReplicaCount`).toBeLessThanOrEqual(s.max);
    }
    // The Kafka trigger measures the bridge's own topic and group, and never asks for idle consumers.
    const env = containerEnv(bridge?.spec.template.spec.containers[0] ?? {});
    const kafka = scalers.flatMap((s) => (s.manifest.spec.triggers ?? []) as Obj[]).filter((t) => t.type === 'kafka');
    expect(kafka.length).toBe(1);
    for (const t of kafka) {
      for (const [key, name] of Object.entries(t.metadata as Record<string, string>).filter(([k]) =>
        k.endsWith('FromEnv'),
      ))
        expect(env[name], `${key}: ${name} is in the bridge's environment`).toBeDefined();
      expect(t.metadata.topic ?? env[t.metadata.topicFromEnv]).toBe(config.ORDERS_TOPIC);
      expect(t.metadata.consumerGroup ?? env[t.metadata.consumerGroupFromEnv]).toBe(config.CONSUMER_GROUP);
      expect(t.metadata.allowIdleConsumers ?? 'false').toBe('false');
      // It connects as the service does: the same security protocol and SASL mechanism as the ConfigMap's.
      const protocol = (config.KAFKA_SECURITY_PROTOCOL ?? 'PLAINTEXT').toUpperCase();
      const sasl = {
        PLAIN: 'plaintext',
        'SCRAM-SHA-256': 'scram_sha256',
        'SCRAM-SHA-512': 'scram_sha512',
        OAUTHBEARER: 'oauthbearer',
      }[(config.KAFKA_SASL_MECHANISM ?? '').toUpperCase()];
      expect(t.metadata.tls ?? 'disable', 'tls').toBe(protocol.endsWith('SSL') ? 'enable' : 'disable');
      expect(t.metadata.sasl ?? 'none', 'sasl').toBe(protocol.startsWith('SASL_') ? sasl : 'none');
    }
  });

  it('scales the workers too, within a connection budget, and both have a disruption budget', () => {
    const scalers = scalersOf('fulfilment-worker-build');
    expect(scalers.length).toBe(1);
    // The Temporal trigger watches the workers' own task queue, over TLS as the service connects (TEMPORAL_TLS).
    const worker = containerEnv(find('Deployment', 'fulfilment-worker-build')?.spec.template.spec.containers[0] ?? {});
    const temporal = ((scalers[0]?.manifest.spec.triggers ?? []) as Obj[]).filter((t) => t.type === 'temporal');
    expect(temporal.length).toBe(1);
    for (const t of temporal) {
      for (const [key, name] of Object.entries(t.metadata as Record<string, string>).filter(([k]) =>
        k.endsWith('FromEnv'),
      ))
        expect(worker[name], `${key}: ${name} is in the worker's environment`).toBeDefined();
      expect(t.metadata.taskQueue ?? worker[t.metadata.taskQueueFromEnv]).toBe(config.TEMPORAL_TASK_QUEUE);
      expect(t.metadata.enableTLS ?? 'true').toBe(['true', '1'].includes(config.TEMPORAL_TLS ?? '') ? 'true' : 'false');
    }
    // Each worker's pool holds at most 10 PostgreSQL connections (src/adapters/store/db.ts): 8 workers = 80.
    expect(scalers[0]?.max).toBeLessThanOrEqual(8);
    for (const d of deployments) {
      const pdbs = all('PodDisruptionBudget').filter((p) => selects(p.spec.selector, d.spec.template.metadata.labels));
      expect(pdbs.length, `${d.metadata.name} has one PodDisruptionBudget`).toBe(1);
      expect(selects(d.spec.selector, d.spec.template.metadata.labels), `${d.metadata.name} selects its own pods`).toBe(
        true,
      );
      // Every scaler keeps at least two, so a disruption budget of one never blocks a drain for good.
      for (const s of scalersOf(d.metadata.name)) expect(s.min, s.what).toBeGreaterThanOrEqual(2);
    }
  });

  it('uses only variables of src/base/config.ts, with values it accepts', () => {
    const problems = [
      ...envProblems('ConfigMap/fulfilment-config', config),
      // A Secret's values are placeholders: names only.
      ...all('Secret').flatMap((s) =>
        envProblems(`Secret/${s.metadata.name}`, Object.fromEntries(secretKeys(s.metadata.name).map((k) => [k, 'x'])), {
          values: false,
        }),
      ),
      ...podTemplates.flatMap(({ owner, pod }) =>
        (pod.spec.containers as Obj[]).flatMap((c) =>
          envProblems(`${owner} ${c.name}`, Object.fromEntries(((c.env ?? []) as Obj[]).map((e) => [e.name, e.value]))),
        ),
      ),
    ];
    expect(problems).toEqual([]);
    expect(config.NODE_ENV).toBe('production');
    for (const key of ['KAFKA_BROKERS', 'TEMPORAL_ADDRESS', 'WAREHOUSE_URL']) expect(config[key], key).toBeTruthy();
    expect(secretKeys('fulfilment-runtime')).toContain('DATABASE_URL');
  });

  it('gives the owner role to the provisioning Job only, and the example Secret holds placeholders only', () => {
    for (const { owner, pod } of podTemplates) {
      for (const c of pod.spec.containers as Obj[]) {
        const env = containerEnv(c);
        if (owner === 'Job/fulfilment-provision') {
          expect(c.command.slice(0, 3)).toEqual(['node', 'bin/fulfilment.mjs', 'provision']);
          expect(env.DATABASE_MIGRATION_URL, owner).toBeDefined();
          expect(env.DATABASE_URL, `${owner}: grants go to the runtime role of DATABASE_URL`).toBeDefined();
        } else expect(env.DATABASE_MIGRATION_URL, owner).toBeUndefined();
        // Every Secret and ConfigMap a pod reads is one of these manifests.
        for (const from of (c.envFrom ?? []) as Obj[]) {
          const ref = from.configMapRef ?? from.secretRef;
          expect(find(from.configMapRef ? 'ConfigMap' : 'Secret', ref.name), `${owner}: ${ref.name}`).toBeDefined();
        }
      }
    }
    expect(find('Job', 'fulfilment-provision')?.spec.template.spec.restartPolicy).toBe('Never');
    for (const s of all('Secret')) {
      for (const [k, v] of Object.entries((s.stringData ?? {}) as Record<string, string>))
        expect(v, `${s.metadata.name} ${k}`).toMatch(/REPLACE/);
    }
    const runtime = new URL(find('Secret', 'fulfilment-runtime')?.stringData.DATABASE_URL);
    const owner = new URL(find('Secret', 'fulfilment-provision')?.stringData.DATABASE_MIGRATION_URL);
    expect(runtime.username).not.toBe(owner.username);
    // KEDA's credentials are keys of the same Secrets.
    for (const ta of all('TriggerAuthentication'))
      for (const ref of ta.spec.secretTargetRef as Obj[])
        expect(secretKeys(ref.name), `${ta.metadata.name} ${ref.parameter}`).toContain(ref.key);
    for (const so of all('ScaledObject'))
      for (const t of so.spec.triggers as Obj[])
        if (t.authenticationRef)
          expect(find('TriggerAuthentication', t.authenticationRef.name), so.metadata.name).toBeDefined();
  });

  it.each(['fulfilment-worker-build', 'fulfilment-bridge'])(
    'probes %s on /livez and /readyz at METRICS_PORT, and gives it longer than its shutdown deadline',
    (name) => {
      const d = find('Deployment', name);
      const pod = d?.spec.template.spec ?? {};
      const c = pod.containers[0] as Obj;
      const env = containerEnv(c);
      expect(env.FULFILMENT_ROLES).toBe(name.replace(/^fulfilment-(\w+).*$/, '$1'));
      expect(env.METRICS_HOST).toBe('0.0.0.0');
      const port = (ref: string | number) =>
        typeof ref === 'number' ? ref : (c.ports as Obj[]).find((p) => p.name === ref)?.containerPort;
      expect(port(c.livenessProbe.httpGet.port)).toBe(Number(env.METRICS_PORT));
      expect(port(c.readinessProbe.httpGet.port)).toBe(Number(env.METRICS_PORT));
      expect(c.livenessProbe.httpGet.path).toBe('/livez');
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      if (c.startupProbe) expect(c.startupProbe.httpGet.path).toBe('/livez');
      expect(d?.spec.template.metadata.annotations?.['prometheus.io/port']).toBe(env.METRICS_PORT);
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(shutdownDeadlineMs(env));
    },
  );

  it('runs every pod as non-root on a read-only root filesystem, /tmp on an emptyDir, with resources set', () => {
    for (const { owner, pod } of podTemplates) {
      const spec = pod.spec as Obj;
      expect(spec.securityContext?.runAsNonRoot, owner).toBe(true);
      expect(spec.securityContext?.runAsUser, owner).toBeGreaterThan(0);
      expect(spec.securityContext?.seccompProfile?.type, owner).toBe('RuntimeDefault');
      expect(spec.automountServiceAccountToken, owner).toBe(false);
      for (const c of spec.containers as Obj[]) {
        const sc = c.securityContext ?? {};
        expect(
          [sc.readOnlyRootFilesystem, sc.allowPrivilegeEscalation, sc.capabilities?.drop],
          `${owner} ${c.name}`,
        ).toEqual([true, false, ['ALL']]);
        const tmp = (c.volumeMounts as Obj[] | undefined)?.find((m) => m.mountPath === '/tmp');
        expect(tmp, `${owner} ${c.name} mounts /tmp`).toBeDefined();
        expect(
          (spec.volumes as Obj[]).find((v) => v.name === tmp?.name)?.emptyDir,
          `${owner}: /tmp is an emptyDir`,
        ).toBeDefined();
        expect(c.resources?.requests?.cpu, `${owner} ${c.name} cpu request`).toBeDefined();
        expect(c.resources?.requests?.memory, `${owner} ${c.name} memory request`).toBeDefined();
        expect(c.resources?.limits?.memory, `${owner} ${c.name} memory limit`).toBeDefined();
      }
    }
  });
});
