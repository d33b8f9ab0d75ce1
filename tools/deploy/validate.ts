/**
 * Schema validation of the deployment artefacts, offline:
 * - deploy/kubernetes/ with kubeconform -strict, against JSON schemas generated here from the Kubernetes OpenAPI
 *   spec (api/openapi-spec/swagger.json of the Go module k8s.io/kubernetes) and from KEDA's CRDs (config/crd of the
 *   Go module github.com/kedacore/keda/v2), the way kubeconform's own schema repository is generated (standalone:
 *   every $ref inlined; strict: additionalProperties false on every object with properties);
 * - docker-compose.yml, interpolated with an env file as Compose does, against the compose-spec JSON schema
 *   (schema/compose-spec.json of github.com/compose-spec/compose-go/v2, the library Docker Compose loads files with).
 * kubeconform also checks `kustomize build deploy/kubernetes`, what `kubectl apply -k` applies. The modules come
 * through the Go module proxy into Go's module cache; kubeconform and kustomize are built once with `go install` and
 * the schemas generated once, into ~/.cache/fulfilment (FULFILMENT_CACHE_DIR), again whenever missing.
 *
 *   npx tsx tools/deploy/validate.ts [env-file]    # validates both; compose is interpolated with env-file
 *                     (default: .env if present, else deploy/compose/example.env with its empty passwords set)
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse, parseAllDocuments } from 'yaml';
import {
  cacheDir,
  fmtSeconds,
  goModuleDir,
  kubeconformPath,
  kustomizePath,
  repoRoot,
  say,
  StackError,
  withLock,
} from '../stack/index.js';

/** Kubernetes release the manifests are validated against: the oldest minor still supported upstream. */
export const KUBERNETES_VERSION = 'v1.35.4';
/** KEDA release whose CRDs (ScaledObject, TriggerAuthentication) the manifests are validated against. */
export const KEDA_VERSION = 'v2.21.0';
/** compose-go release whose compose-spec schema docker-compose.yml is validated against. */
export const COMPOSE_GO_VERSION = 'v2.16.2';
/** Bump when the conversion below changes, so cached schemas are generated again. */
const GENERATOR_REVISION = '1';

export const kubernetesDir = join(repoRoot, 'deploy', 'kubernetes');
export const composeFile = join(repoRoot, 'docker-compose.yml');
export const composeExampleEnv = join(repoRoot, 'deploy', 'compose', 'example.env');

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };
const isObject = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------------------------
// Kubernetes and KEDA schemas

/** kubeconform's file name for a kind: `{{ .ResourceKind }}{{ .KindSuffix }}.json` (pkg/registry/registry.go). */
export function schemaFileName(kind: string, apiVersion: string): string {
  const [groupOrVersion = '', version] = apiVersion.split('/');
  const suffix = `-${(groupOrVersion.split('.')[0] ?? '').toLowerCase()}${version === undefined ? '' : `-${version.toLowerCase()}`}`;
  return `${kind.toLowerCase()}${suffix}.json`;
}

/** The -schema-location template for a folder of generated schemas. */
export const schemaLocation = (dir: string): string => join(dir, '{{ .ResourceKind }}{{ .KindSuffix }}.json');

/**
 * Makes a schema strict the way kubectl's validation is: an object that lists its properties accepts no others
 * (unless it says otherwise, or preserves unknown fields), so a misspelt or misplaced field is an error. Also drops
 * descriptions, which only make the files large.
 */
function strictify(node: Json): Json {
  if (Array.isArray(node)) return node.map(strictify);
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'description') continue;
    // Inside `properties` the keys are field names, not keywords: a field may be called `description`.
    out[k] =
      k === 'properties' && isObject(v)
        ? Object.fromEntries(Object.entries(v).map(([f, s]) => [f, strictify(s)]))
        : strictify(v);
  }
  if (
    isObject(out.properties) &&
    out.additionalProperties === undefined &&
    out['x-kubernetes-preserve-unknown-fields'] !== true
  )
    out.additionalProperties = false;
  // A Kubernetes int-or-string (IntOrString; CRDs: x-kubernetes-int-or-string) takes either form.
  if (out.format === 'int-or-string' || (out['x-kubernetes-int-or-string'] === true && out.anyOf === undefined)) {
    delete out.type;
    delete out.format;
    out.oneOf = [{ type: 'string' }, { type: 'integer' }];
  }
  return out;
}

/** Pins `apiVersion` and `kind` of a top-level schema to the one resource it describes. */
function pinKind(schema: JsonObject, apiVersion: string, kind: string): JsonObject {
  const properties = isObject(schema.properties) ? schema.properties : {};
  return {
    ...schema,
    properties: {
      ...properties,
      apiVersion: {
        ...(isObject(properties.apiVersion) ? properties.apiVersion : {}),
        type: 'string',
        enum: [apiVersion],
      },
      kind: { ...(isObject(properties.kind) ? properties.kind : {}), type: 'string', enum: [kind] },
    },
  };
}

interface Gvk {
  group: string;
  version: string;
  kind: string;
}

/** Standalone schemas of every kind in a Kubernetes OpenAPI v2 spec: file name → schema. */
export function kubernetesSchemas(swagger: { definitions: Record<string, JsonObject> }): Map<string, JsonObject> {
  const defs = { ...swagger.definitions };
  // The API server takes a quantity (`cpu: 1`, `memory: 512Mi`) as a number or a string.
  defs['io.k8s.apimachinery.pkg.api.resource.Quantity'] = { oneOf: [{ type: 'string' }, { type: 'number' }] };
  const expanded = new Map<string, Json>();
  let cycles = 0;
  // Inlines every $ref; a type that contains itself (JSONSchemaProps) is left open where it recurs. An expansion
  // that met no such cycle is the same wherever it is used, so it is kept for the next use.
  const expand = (node: Json, stack: string[]): Json => {
    if (Array.isArray(node)) return node.map((n) => expand(n, stack));
    if (!isObject(node)) return node;
    const ref = node.$ref;
    if (typeof ref === 'string') {
      const name = ref.replace(/^#\/definitions\//, '');
      if (stack.includes(name)) {
        cycles++;
        return {};
      }
      const cached = expanded.get(name);
      if (cached !== undefined) return cached;
      const target = defs[name];
      if (!target) throw new StackError(`the OpenAPI spec refers to ${ref}, which it does not define`);
      const before = cycles;
      const result = expand(target, [...stack, name]);
      if (cycles === before) expanded.set(name, result);
      return result;
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, expand(v, stack)]));
  };
  const out = new Map<string, JsonObject>();
  for (const [name, def] of Object.entries(defs)) {
    const gvks = def['x-kubernetes-group-version-kind'] as unknown as Gvk[] | undefined;
    if (!gvks) continue;
    const schema = strictify(expand(def, [name])) as JsonObject;
    for (const { group, version, kind } of gvks) {
      const apiVersion = group ? `${group}/${version}` : version;
      // Option types (DeleteOptions, WatchEvent...) name every group; the kind's own definition wins a clash.
      const file = schemaFileName(kind, apiVersion);
      if (out.has(file) && !name.endsWith(`.${version}.${kind}`)) continue;
      out.set(file, pinKind(schema, apiVersion, kind));
    }
  }
  return out;
}

/** Schemas of the custom resources defined by CRD files (YAML, one or more documents each): file name → schema. */
export function crdSchemas(crdYaml: string[]): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  for (const text of crdYaml) {
    for (const doc of parseAllDocuments(text)) {
      const crd = doc.toJS() as {
        kind?: string;
        spec?: {
          group: string;
          names: { kind: string };
          versions?: { name: string; schema?: { openAPIV3Schema?: JsonObject } }[];
        };
      } | null;
      if (crd?.kind !== 'CustomResourceDefinition' || !crd.spec) continue;
      for (const v of crd.spec.versions ?? []) {
        const schema = v.schema?.openAPIV3Schema;
        if (!schema) continue;
        const apiVersion = `${crd.spec.group}/${v.name}`;
        out.set(
          schemaFileName(crd.spec.names.kind, apiVersion),
          pinKind(strictify(schema) as JsonObject, apiVersion, crd.spec.names.kind),
        );
      }
    }
  }
  return out;
}

/** Folder of the generated schemas (Kubernetes and KEDA), generated first when missing. */
export async function kubernetesSchemaDir(): Promise<string> {
  const dir = join(cacheDir(), 'kubernetes-schemas', `${KUBERNETES_VERSION}+keda-${KEDA_VERSION}`);
  const marker = join(dir, '.complete');
  const done = () => existsSync(marker) && readFileSync(marker, 'utf8').trim() === GENERATOR_REVISION;
  if (done()) return dir;
  return withLock(join(cacheDir(), '.locks', 'kubernetes-schemas'), 'the Kubernetes schema generation', async () => {
    if (done()) return dir;
    const start = Date.now();
    say(`generating Kubernetes ${KUBERNETES_VERSION} and KEDA ${KEDA_VERSION} JSON schemas (first run only)...`);
    const k8s = await goModuleDir('k8s.io/kubernetes', KUBERNETES_VERSION);
    const keda = await goModuleDir('github.com/kedacore/keda/v2', KEDA_VERSION);
    const swagger = JSON.parse(readFileSync(join(k8s, 'api', 'openapi-spec', 'swagger.json'), 'utf8')) as {
      definitions: Record<string, JsonObject>;
    };
    const crdDir = join(keda, 'config', 'crd', 'bases');
    const schemas = new Map([
      ...kubernetesSchemas(swagger),
      ...crdSchemas(
        readdirSync(crdDir)
          .filter((f) => f.endsWith('.yaml'))
          .map((f) => readFileSync(join(crdDir, f), 'utf8')),
      ),
    ]);
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    for (const [file, schema] of schemas) writeFileSync(join(tmp, file), JSON.stringify(schema));
    writeFileSync(join(tmp, '.complete'), `${GENERATOR_REVISION}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    say(`${schemas.size} schemas in ${fmtSeconds(Date.now() - start)} → ${dir}`);
    return dir;
  });
}

export interface KubeconformResource {
  filename: string;
  kind: string;
  name: string;
  version: string;
  status: 'statusValid' | 'statusInvalid' | 'statusError' | 'statusSkipped' | 'statusEmpty';
  msg: string;
  validationErrors?: { path: string; msg: string }[];
}

export interface KubeconformResult {
  exitCode: number;
  resources: KubeconformResource[];
  summary: { valid: number; invalid: number; errors: number; skipped: number };
  /** One line per resource that is not valid: file, kind/name, what is wrong. */
  problems: string[];
}

/**
 * Runs `kubeconform -strict` on files or folders (kustomization.yaml files, which are not resources, are left out),
 * against the generated schemas only: a kind without a schema is an error, never skipped.
 */
export async function kubeconform(paths: string[]): Promise<KubeconformResult> {
  const [bin, dir] = [await kubeconformPath(), await kubernetesSchemaDir()];
  const args = [
    '-strict',
    '-verbose',
    '-summary',
    '-output',
    'json',
    '-schema-location',
    schemaLocation(dir),
    '-ignore-filename-pattern',
    'kustomization\\.ya?ml$',
    ...paths,
  ];
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (err += b.toString()));
      child.once('error', reject);
      child.once('close', (c) => resolve({ code: c ?? 1, stdout: out, stderr: err }));
    },
  );
  let parsed: { resources?: KubeconformResource[]; summary?: KubeconformResult['summary'] };
  try {
    parsed = JSON.parse(stdout) as typeof parsed;
  } catch {
    throw new StackError(`kubeconform printed no JSON (exit ${code}): ${stderr.trim() || stdout.trim()}`);
  }
  const resources = parsed.resources ?? [];
  const problems = resources
    .filter((r) => r.status !== 'statusValid')
    .map((r) => {
      const details = r.validationErrors?.length
        ? r.validationErrors.map((e) => `${e.path}: ${e.msg}`).join('; ')
        : r.msg;
      return `${r.filename.replace(`${repoRoot}/`, '')}: ${r.kind || '?'}/${r.name || '?'}: ${r.status.replace('status', '').toLowerCase()}: ${details}`;
    });
  return {
    exitCode: code,
    resources,
    summary: parsed.summary ?? { valid: 0, invalid: 0, errors: 0, skipped: 0 },
    problems,
  };
}

/**
 * `kustomize build` of a kustomization folder (what `kubectl apply -k` applies), written to a file for kubeconform;
 * returns its path. Throws with kustomize's message when the kustomization is broken.
 */
export async function kustomizeBuild(dir = kubernetesDir): Promise<string> {
  const bin = await kustomizePath();
  const { stdout } = await promisify(execFile)(bin, ['build', dir], { maxBuffer: 64 << 20 }).catch(
    (e: { stderr?: string; message: string }) => {
      throw new StackError(
        `kustomize build ${dir.replace(`${repoRoot}/`, '')} failed: ${e.stderr?.trim() || e.message}`,
      );
    },
  );
  const out = join(tmpdir(), `fulfilment-kustomize-build-${process.pid}.yaml`);
  writeFileSync(out, stdout);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Compose

/** Path of the compose-spec JSON schema (from compose-go's module). */
export async function composeSchemaPath(): Promise<string> {
  return join(
    await goModuleDir('github.com/compose-spec/compose-go/v2', COMPOSE_GO_VERSION),
    'schema',
    'compose-spec.json',
  );
}

/** An env file as Compose reads it: `NAME=value` lines, `#` comments, optional quotes around the value. */
export function readEnvFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new StackError(`${path}: "${line}" is not NAME=value`);
    const value = line.slice(eq + 1).trim();
    out[line.slice(0, eq).trim()] = /^(['"]).*\1$/.test(value) ? value.slice(1, -1) : value;
  }
  return out;
}

/**
 * Compose's variable interpolation of one string: `$$` is a dollar; `${VAR}`/`$VAR`; `${VAR:-default}` (unset or
 * empty), `${VAR-default}` (unset); `${VAR:?message}`/`${VAR?message}` fail with the message. Unset without a
 * default is empty, as in Compose. Throws on a required variable that is missing.
 */
export function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])((?:[^{}]|\{[^{}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (m, braced?: string, op?: string, arg?: string, bare?: string) => {
      if (m === '$$') return '$';
      const name = (braced ?? bare) as string;
      const value = env[name];
      const missing = op?.startsWith(':') ? value === undefined || value === '' : value === undefined;
      if (op?.endsWith('-')) return missing ? interpolate(arg ?? '', env) : (value ?? '');
      if (op?.endsWith('?')) {
        if (missing) throw new StackError(`required variable ${name} is missing a value: ${arg ?? ''}`);
        return value ?? '';
      }
      return value ?? '';
    },
  );
}

/** Every string value of a parsed YAML document interpolated (keys are left as they are). */
export function interpolateDocument<T>(doc: T, env: Record<string, string | undefined>): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return interpolate(v, env);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(doc) as T;
}

/** The compose file as Compose sees it with `env`: parsed (with `<<` merge keys), then interpolated. */
export function loadCompose(env: Record<string, string | undefined>, file = composeFile): Record<string, unknown> {
  return interpolateDocument(parse(readFileSync(file, 'utf8'), { merge: true }) as Record<string, unknown>, env);
}

/** Problems of a compose document against the compose-spec schema, one line each (empty: valid). */
export async function composeSchemaProblems(doc: unknown): Promise<string[]> {
  const schema = JSON.parse(readFileSync(await composeSchemaPath(), 'utf8')) as Record<string, unknown>;
  // The schema's only format, duration, is Go's (`30s`, `1m30s`); ajv leaves unknown formats to the caller.
  const ajv = new Ajv2020({
    allErrors: true,
    strict: false,
    formats: { duration: /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/ },
  });
  const validate = ajv.compile(schema);
  if (validate(doc)) return [];
  return (validate.errors ?? []).map(
    (e) =>
      `${e.instancePath || '/'}: ${e.message ?? 'invalid'}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`,
  );
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const envFile = process.argv[2] ?? (existsSync(join(repoRoot, '.env')) ? join(repoRoot, '.env') : composeExampleEnv);
  let ok = true;
  const built = await kustomizeBuild();
  try {
    for (const [what, path] of [
      ['deploy/kubernetes/', kubernetesDir],
      ['kustomize build deploy/kubernetes', built],
    ] as const) {
      const k = await kubeconform([path]);
      for (const line of k.problems) process.stdout.write(`${line}\n`);
      process.stdout.write(
        `kubeconform -strict ${what} (Kubernetes ${KUBERNETES_VERSION}, KEDA ${KEDA_VERSION}): ${k.summary.valid} valid, ${k.summary.invalid} invalid, ${k.summary.errors} errors, ${k.summary.skipped} skipped\n`,
      );
      ok &&= k.exitCode === 0 && k.problems.length === 0;
    }
  } finally {
    rmSync(built, { force: true });
  }
  // example.env leaves the passwords empty (Compose then refuses to start): check the file as if they were set.
  const env = Object.fromEntries(
    Object.entries(readEnvFile(envFile)).map(([k, v]) => [
      k,
      v === '' && envFile === composeExampleEnv ? 'example' : v,
    ]),
  );
  const c = await composeSchemaProblems(loadCompose({ ...env, ...process.env }));
  for (const line of c) process.stdout.write(`docker-compose.yml ${line}\n`);
  process.stdout.write(
    `docker-compose.yml with ${envFile.replace(`${repoRoot}/`, '')} against compose-spec (compose-go ${COMPOSE_GO_VERSION}): ${c.length === 0 ? 'valid' : `${c.length} problems`}\n`,
  );
  return ok && c.length === 0 ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof StackError ? err.message : ((err as Error).stack ?? String(err))}\n`);
      process.exit(1);
    },
  );
}
