/**
 * The stack's toolchain: prerequisites (go, java, mvn), what no registry ships as a binary (built once with
 * `go install` into the cache: the Temporal server for STACK_TEMPORAL=server and the TLS Temporal, its schema tool and
 * Web UI server, kubeconform, kustomize), Go modules' folders (`go mod download`), Maven-fetched jar sets (Kafka, Temporal's
 * time-skipping test server) and the test server's wrapper script. Everything lands in the cache dir and is rebuilt
 * automatically when missing or when a checked-in pom changes.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  copyFileSync,
  readdirSync,
  accessSync,
  constants,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fmtSeconds, say, StackError } from './log.js';
import { cacheDir, kafkaPom, testServerPom } from './paths.js';
import { runQuick, runWithProgress, which, withLock } from './proc.js';
import { TEMPORAL_CLI } from './temporal-cli.js';

const execFileAsync = promisify(execFile);

// ---------------------------------------------------------------------------------------------------------------
// prerequisites

export const MISSING = {
  go: 'install Go 1.22+ (apt-get install golang or https://go.dev/dl)',
  java: 'install a Java 17+ JDK (apt-get install openjdk-17-jdk-headless)',
  mvn: 'apt-get install maven',
} as const;

export function requireGo(): string {
  const go = which('go') ?? ['/usr/local/go/bin/go', '/usr/lib/go/bin/go'].find((p) => existsSync(p));
  if (!go) throw new StackError(`go not found: ${MISSING.go}`);
  return go;
}

let javaChecked: string | undefined;
export function requireJava(): string {
  if (javaChecked) return javaChecked;
  const java =
    process.env.JAVA_HOME && existsSync(join(process.env.JAVA_HOME, 'bin', 'java'))
      ? join(process.env.JAVA_HOME, 'bin', 'java')
      : which('java');
  if (!java) throw new StackError(`java not found: ${MISSING.java}`);
  const { output } = runQuick(java, ['-version']);
  const m = /version "(\d+)(?:\.(\d+))?/.exec(output);
  const major = m ? (m[1] === '1' ? Number(m[2]) : Number(m[1])) : 0;
  if (major < 17) throw new StackError(`java ${m ? m[0] : '(unknown version)'} at ${java} is too old: ${MISSING.java}`);
  javaChecked = java;
  return java;
}

export function requireMaven(): string {
  const mvn = which('mvn');
  if (!mvn) throw new StackError(`mvn not found: ${MISSING.mvn}`);
  return mvn;
}

// ---------------------------------------------------------------------------------------------------------------
// Go-built tools: what no registry ships as a binary

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The SQLite driver the Temporal CLI release links (TEMPORAL_CLI) and the Temporal server release pins: newer than
 * v1.44.3, the first without a fault of v1.34.1 that could leave the only connection of a Temporal on SQLite
 * interrupted for good once a statement's deadline passed while it ran (temporalio/temporal#9198); checked by the
 * tests (test/stack/sqlite-driver.int.test.ts).
 */
export const TEMPORAL_SERVER_SQLITE_DRIVER = 'modernc.org/sqlite@v1.51.0';

/** kubeconform, the Kubernetes manifest validator of the test suite (tools/deploy/validate.ts). */
export const KUBECONFORM_TAG = 'v0.8.0';

/** kubeconform: the cached build, else built now with `go install` (first run only, well under a minute). */
export function kubeconformPath(): Promise<string> {
  return goInstalledTool({
    name: 'kubeconform',
    pkg: 'github.com/yannh/kubeconform/cmd/kubeconform',
    tags: [KUBECONFORM_TAG],
    expected: '~30 s',
    versioned: true,
  });
}

/** kustomize, which builds deploy/kubernetes as `kubectl apply -k` would, for kubeconform to check the result. */
export const KUSTOMIZE_TAG = 'v5.8.1';

/** kustomize: the cached build, else built now with `go install` (first run only, about a minute). */
export function kustomizePath(): Promise<string> {
  return goInstalledTool({
    name: 'kustomize',
    pkg: 'sigs.k8s.io/kustomize/kustomize/v5',
    tags: [KUSTOMIZE_TAG],
    expected: '~1-2 min',
    versioned: true,
  });
}

/**
 * The Temporal server release STACK_TEMPORAL=server and the TLS Temporal run, and the release of its schema tool and
 * schema files: the one the dev server's CLI embeds (no registry ships the server alone as a binary, so it is built).
 */
export const TEMPORAL_SERVER_TAG = `v${TEMPORAL_CLI.server}`;
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';

/** The Temporal server (`go.temporal.io/server/cmd/server`), built once into the cache as `temporal-server`. */
export const TEMPORAL_SERVER_BINARY = 'temporal-server';
export function temporalServerPath(): Promise<string> {
  return goInstalledTool({
    name: TEMPORAL_SERVER_BINARY,
    built: 'server',
    pkg: `${TEMPORAL_SERVER_MODULE}/cmd/server`,
    tags: [TEMPORAL_SERVER_TAG],
    expected: '~4-16 min on 2 cores',
    versioned: true,
  });
}

/** Its SQL schema tool (`cmd/tools/sql`, what the release images ship as temporal-sql-tool). */
export function temporalSqlToolPath(): Promise<string> {
  return goInstalledTool({
    name: 'temporal-sql-tool',
    built: 'sql',
    pkg: `${TEMPORAL_SERVER_MODULE}/cmd/tools/sql`,
    tags: [TEMPORAL_SERVER_TAG],
    expected: '~1-3 min',
    versioned: true,
  });
}

/**
 * The Web UI server beside STACK_TEMPORAL=server (the dev server has its own inside): the release the CLI embeds,
 * whose module carries the built UI assets.
 */
export const TEMPORAL_UI_SERVER_TAG = `v${TEMPORAL_CLI.ui}`;

export const TEMPORAL_UI_SERVER_BINARY = 'temporal-ui-server';
export function temporalUiServerPath(): Promise<string> {
  return goInstalledTool({
    name: TEMPORAL_UI_SERVER_BINARY,
    built: 'server',
    pkg: 'github.com/temporalio/ui-server/v2/cmd/server',
    tags: [TEMPORAL_UI_SERVER_TAG],
    expected: '~1-3 min',
    versioned: true,
  });
}

export interface GoTool {
  /** Binary name: `<cache>/bin/<name>`. */
  name: string;
  /** Name `go install` gives the binary (the package's last element), when it is not `name`. */
  built?: string;
  /** Go package path of the command. */
  pkg: string;
  /** Tags tried in order until one builds. */
  tags: string[];
  /** How long the first build takes, for the progress line. */
  expected: string;
  /**
   * Dependencies to build with at newer versions than the command's own go.mod asks for (`module@version`). The
   * command is then built in a throwaway module that requires it and these (`go get`, `go build`) instead of with
   * `go install`, which takes the command's dependencies as they are.
   */
  upgrades?: string[];
  /** Rebuild when the cached binary was built from another tag (or other upgrades) than the first. */
  versioned?: boolean;
}

/** What a build of `tool` from `tag` is, as its `.version` file says. */
function buildIdentity(tool: GoTool, tag: string): string {
  return [tag, ...(tool.upgrades ?? [])].join(' ');
}

/** Builds `tool` at `tag` into `dir`, by `go install` or, with upgrades, in a throwaway module. */
async function goBuild(tool: GoTool, tag: string, dir: string, logFile: string): Promise<void> {
  const go = requireGo();
  const env = { ...process.env, GOBIN: dir, GOFLAGS: process.env.GOFLAGS ?? '' };
  const label = `go build ${tool.name}@${tag}`;
  if (!tool.upgrades?.length) {
    await runWithProgress(label, go, ['install', `${tool.pkg}@${tag}`], { logFile, env, everySec: 15 });
    return;
  }
  const work = join(dir, 'module');
  mkdirSync(work, { recursive: true });
  await runWithProgress(`go mod init (${tool.name})`, go, ['mod', 'init', `fulfilment.local/build/${tool.name}`], {
    logFile,
    env,
    cwd: work,
  });
  await runWithProgress(
    `go get ${tool.name}@${tag} ${tool.upgrades.join(' ')}`,
    go,
    ['get', `${tool.pkg}@${tag}`, ...tool.upgrades],
    { logFile, env, cwd: work, everySec: 15 },
  );
  await runWithProgress(label, go, ['build', '-o', join(dir, tool.built ?? tool.name), tool.pkg], {
    logFile,
    env,
    cwd: work,
    everySec: 15,
  });
}

/** Where the Go command `name` is (or will be) built in the cache. */
export const cachedToolPath = (name: string): string => join(cacheDir(), 'bin', name);

/**
 * A Go command built once into `<cache>/bin` (goBuild; under a lock, into a temporary folder renamed into place, so a
 * killed build leaves nothing half-done); `<name>.version` holds the tag and upgrades it was built from.
 */
export async function goInstalledTool(tool: GoTool): Promise<string> {
  const bin = cachedToolPath(tool.name);
  const versionFile = join(cacheDir(), 'bin', `${tool.name}.version`);
  const current = () =>
    isExecutable(bin) &&
    (!tool.versioned ||
      (existsSync(versionFile) && readFileSync(versionFile, 'utf8').trim() === buildIdentity(tool, tool.tags[0]!)));
  if (current()) return bin;
  return withLock(join(cacheDir(), '.locks', `${tool.name}-build`), `the ${tool.name} build`, async () => {
    if (current()) return bin;
    const logFile = join(cacheDir(), 'logs', `go-install-${tool.name}.log`);
    const errors: string[] = [];
    for (const tag of tool.tags) {
      const tmpBin = join(cacheDir(), 'bin', `.build-${tool.name}-${process.pid}`);
      rmSync(tmpBin, { recursive: true, force: true });
      mkdirSync(tmpBin, { recursive: true });
      say(`building ${tool.name} ${tag} with go (first run only, ${tool.expected}; log: ${logFile})...`);
      const start = Date.now();
      try {
        await goBuild(tool, tag, tmpBin, logFile);
      } catch (e) {
        errors.push(`${tag}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
        if (tool.tags.length > 1) say(`the build of ${tool.name} ${tag} failed; trying the next older tag`);
        rmSync(tmpBin, { recursive: true, force: true });
        continue;
      }
      renameSync(join(tmpBin, tool.built ?? tool.name), bin);
      rmSync(tmpBin, { recursive: true, force: true });
      writeFileSync(versionFile, `${buildIdentity(tool, tag)}\n`);
      say(`${tool.name} ${buildIdentity(tool, tag)} built in ${fmtSeconds(Date.now() - start)}: ${bin}`);
      return bin;
    }
    throw new StackError(`could not build ${tool.name} with go:\n  ${errors.join('\n  ')}\nsee ${logFile}`);
  });
}

/** Folder of a Go module in the module cache, downloaded through the module proxy when missing (`go mod download`). */
export async function goModuleDir(module: string, version: string): Promise<string> {
  const go = requireGo();
  const { stdout } = await execFileAsync(go, ['mod', 'download', '-json', `${module}@${version}`], {
    env: { ...process.env, GOFLAGS: process.env.GOFLAGS ?? '' },
    maxBuffer: 1 << 20,
  }).catch((e: { stdout?: string; stderr?: string; message: string }) => {
    const reported = (() => {
      try {
        return (JSON.parse(e.stdout ?? '') as { Error?: string }).Error;
      } catch {
        return undefined;
      }
    })();
    throw new StackError(`go mod download ${module}@${version} failed: ${reported ?? e.stderr?.trim() ?? e.message}`);
  });
  const { Dir } = JSON.parse(stdout) as { Dir?: string };
  if (!Dir) throw new StackError(`go mod download ${module}@${version} named no folder`);
  return Dir;
}

// ---------------------------------------------------------------------------------------------------------------
// Maven jar sets

export interface JarSet {
  version: string;
  /** Folder of the cached set, e.g. ~/.cache/fulfilment/kafka-4.1.1 */
  dir: string;
  /** Folder holding the jars; classpath is `<libs>/*`. */
  libs: string;
}

function pomProperty(pom: string, name: string): string {
  const m = new RegExp(`<${name.replace(/\./g, '\\.')}>([^<]+)</`).exec(readFileSync(pom, 'utf8'));
  if (!m?.[1]) throw new StackError(`${pom} has no <${name}> property`);
  return m[1].trim();
}

/**
 * Copies the runtime dependencies of a checked-in pom into `<cache>/<name>-<version>/libs` (once). The set is
 * fetched into a temporary folder and renamed into place, so a run killed half-way leaves nothing half-done; a
 * marker holds the pom's hash, so editing the pom refetches.
 */
async function mavenJarSet(name: string, pom: string, versionProperty: string): Promise<JarSet> {
  const version = pomProperty(pom, versionProperty);
  const dir = join(cacheDir(), `${name}-${version}`);
  const libs = join(dir, 'libs');
  const marker = join(dir, '.complete');
  const hash = createHash('sha256').update(readFileSync(pom)).digest('hex');
  const done = () => existsSync(marker) && readFileSync(marker, 'utf8').trim() === hash && existsSync(libs);
  if (done()) return { version, dir, libs };
  return withLock(join(cacheDir(), '.locks', `${name}-${version}`), `the ${name} ${version} download`, async () => {
    if (done()) return { version, dir, libs };
    requireJava();
    const mvn = requireMaven();
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    say(`fetching ${name} ${version} jars from Maven Central (first run only)...`);
    const start = Date.now();
    await runWithProgress(
      `mvn copy-dependencies ${name}`,
      mvn,
      [
        '-B',
        '--no-transfer-progress',
        '-f',
        pom,
        'dependency:copy-dependencies',
        `-DoutputDirectory=${join(tmp, 'libs')}`,
        '-DincludeScope=runtime',
      ],
      { logFile: join(cacheDir(), 'logs', `mvn-${name}.log`), everySec: 10 },
    );
    copyFileSync(pom, join(tmp, 'pom.xml'));
    writeFileSync(join(tmp, '.complete'), `${hash}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    say(`${name} ${version}: ${readdirSync(libs).length} jars in ${fmtSeconds(Date.now() - start)} → ${libs}`);
    return { version, dir, libs };
  });
}

export const kafkaJars = (): Promise<JarSet> => mavenJarSet('kafka', kafkaPom(), 'kafka.version');
export const testServerJars = (): Promise<JarSet> =>
  mavenJarSet('temporal-test-server', testServerPom(), 'temporal.test.server.version');

/**
 * Path of an executable that runs Temporal's time-skipping test server (`<path> <port>`), for
 * `TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } })`.
 * Fetches the jars the first time.
 */
export async function testServerExecutablePath(): Promise<string> {
  const set = await testServerJars();
  const wrapper = join(set.dir, 'temporal-test-server');
  const script = [
    '#!/bin/sh',
    '# Generated by tools/stack/tools.ts: runs Temporal time-skipping test server; usage: temporal-test-server <port>',
    'JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"',
    `exec "$JAVA" -Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true -cp '${set.libs}/*' io.temporal.testserver.TestServer "$@"`,
    '',
  ].join('\n');
  if (!existsSync(wrapper) || readFileSync(wrapper, 'utf8') !== script) {
    requireJava();
    const tmp = `${wrapper}.tmp-${process.pid}`;
    writeFileSync(tmp, script);
    chmodSync(tmp, 0o755);
    renameSync(tmp, wrapper);
  }
  return wrapper;
}
