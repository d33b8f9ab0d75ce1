/** What the shipping-pause tests share: waiting until a pause holds a tenant, and `shipping resume` in its own process. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { events, waitFor, type Scenario } from './harness.js';

const CLI = fileURLToPath(new URL('../../bin/fulfilment.mjs', import.meta.url));

/**
 * Resolves once the worker holds `tenant`'s orders: the workers read the pauses every 2 s, so probe orders are
 * produced one by one until one waits for the pause (those before it ship).
 */
export async function untilPauseHolds(s: Scenario, tenant: string): Promise<void> {
  let probes = 0;
  await waitFor(
    'the worker to hold the tenant’s orders',
    async () => {
      probes += 1;
      const id = `probe-${probes}`;
      await s.produce([{ key: `${tenant}/${id}`, value: events.placed(tenant, id) }]);
      const row = await waitFor(`${id} to wait or ship`, async () => {
        const r = await s.row(tenant, id);
        return r && (r.waiting_since || r.status !== 'pending') ? r : undefined;
      });
      return row.waiting_since ? true : undefined;
    },
    120_000,
    0,
  );
}

/** `fulfilment shipping resume …` in a process of its own, as an operator runs it; `heard` once it said `text`. */
export function resumeProcess(s: Pick<Scenario, 'env'>, args: string[], text: string) {
  const child = spawn(process.execPath, [CLI, 'shipping', 'resume', ...args], {
    env: s.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let said = '';
  child.stdout.on('data', (c: Buffer) => (said += c.toString()));
  child.stderr.on('data', (c: Buffer) => (said += c.toString()));
  const exited = new Promise<number | string>((r) => child.on('close', (code, sig) => r(code ?? sig ?? 'unknown')));
  const heard = waitFor(`the resume to say "${text}"`, () => said.includes(text), 120_000);
  return { child, exited, heard, said: () => said };
}

/** Ends the pauses a failed run left in force for this scenario's tenants (they would hold nothing else, but count). */
export async function endLeftoverPauses(db: Db | undefined, s: Pick<Scenario, 'suffix'>): Promise<void> {
  await db
    ?.query(
      "UPDATE shipping_pauses SET resumed_at = now(), resumed_by = 'test', resume_reason = 'test over' WHERE resumed_at IS NULL AND tenant_id LIKE $1",
      [`%${s.suffix}%`],
    )
    .catch(() => undefined);
}

/**
 * The rows of `tenant`'s orders named `o-…` (not the probes): status, wait, when it shipped, and the mark of its last
 * release (`released_at` as the store's text, as releaseWaitingOrders returns it; a release since changes it).
 */
export async function orderRows(db: Db, tenant: string) {
  return inTenantTransaction(db, tenant, async (tx) => {
    const found = await tx.query<{
      order_id: string;
      status: string;
      waiting_for: string | null;
      waiting_since: Date | null;
      waited_at: Date | null;
      shipped_at: Date | null;
      release_mark: string | null;
    }>(
      `SELECT order_id, status, waiting_for, waiting_since, waited_at, shipped_at, released_at::text AS release_mark
         FROM fulfilments WHERE tenant_id = $1 AND order_id LIKE 'o-%'`,
      [tenant],
    );
    return found.rows;
  });
}

/** `shipping resume --tenant <tenant> --rate <rate>` SIGKILLed once it said it woke an order; what it had said. */
export async function resumeKilledOnceItWakes(s: Pick<Scenario, 'env'>, tenant: string, rate: number): Promise<string> {
  const args = ['--tenant', tenant, '--reason', 'done', '--by', 'ops', '--rate', String(rate)];
  const resume = resumeProcess(s, args, 'order(s) woken');
  await resume.heard;
  resume.child.kill('SIGKILL');
  const exited = await resume.exited;
  if (exited !== 'SIGKILL') throw new Error(`the resume ended by itself (${exited}) before it was killed`);
  return resume.said();
}
