/**
 * The local warehouse HTTP service (tools/warehouse/main.ts), run with tsx. Restarted by `up` when its sources changed since it was started.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { StackPlan } from '../addresses.js';
import { repoRoot, serviceLog, stateDir } from '../paths.js';
import type { PidRecord } from '../proc.js';
import type { Service } from '../service.js';

const srcDir = () => join(repoRoot, 'tools', 'warehouse');
const entry = () => join(srcDir(), 'main.ts');

function newestMtime(dir: string): number {
  let newest = 0;
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e);
    try {
      const st = statSync(p);
      newest = Math.max(newest, st.isDirectory() ? newestMtime(p) : st.mtimeMs);
    } catch {
      /* vanished */
    }
  }
  return newest;
}

export const warehouseService: Service = {
  name: 'warehouse',
  address: (plan) => plan.warehouse.url,
  external: (plan) => plan.warehouse.external,
  ports: (plan) => [
    { host: plan.warehouse.host, port: plan.warehouse.listenPort, label: 'warehouse HTTP', env: 'WAREHOUSE_URL' },
  ],
  logs: () => [serviceLog('warehouse')],
  readyTimeoutMs: 30_000,
  stopSignal: 'SIGTERM',
  stopGraceMs: 10_000,

  unavailable: () => (existsSync(entry()) ? undefined : 'tools/warehouse/main.ts does not exist; not started'),

  async prepare(plan: StackPlan) {
    return {
      service: 'warehouse',
      command: process.execPath,
      args: ['--import', 'tsx', entry()],
      cwd: repoRoot,
      env: {
        ...process.env,
        WAREHOUSE_PORT: String(plan.warehouse.listenPort),
        WAREHOUSE_DATA_FILE: process.env.WAREHOUSE_DATA_FILE ?? join(stateDir(), 'warehouse', 'shipments.jsonl'),
      },
    };
  },

  async ready(plan) {
    try {
      const res = await fetch(`${plan.warehouse.url}/health`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      return res.status === 200;
    } catch {
      return false;
    }
  },

  restartReason(rec: PidRecord) {
    const started = Date.parse(rec.startedAt);
    const changed = Math.max(newestMtime(srcDir()), statSafe(join(repoRoot, 'src', 'base', 'config.ts')));
    return Number.isFinite(started) && changed > started ? 'its source changed since it was started' : undefined;
  },
};

function statSafe(p: string): number {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return 0;
  }
}
