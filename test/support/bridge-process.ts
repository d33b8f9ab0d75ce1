/**
 * A bridge-only instance in a process of its own, for tests that stop it the way production does: SIGTERM (a
 * graceful stop, as main.ts does it) or SIGKILL (a crash, nothing cleaned up). Prints `ready` once it consumes,
 * `delivered <eventId>` after every delivery Temporal accepted, and `stopped <ms>` when a SIGTERM stop finished.
 * With TEST_HOLD_ORDERS set (a prefix), the hand-over of an order whose id starts with it never ends: a slow order that
 * holds its partition's commits until the process is killed. Run by rebalance.int.test.ts and
 * bridge-kill-read-ahead.int.test.ts with the scenario's environment.
 */
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/base/config.js';
import { createLogger } from '../../src/base/log.js';

const app = await startApp(loadConfig(), {
  logger: createLogger(process.env.CHILD_LOG_LEVEL ?? 'silent'),
  roles: { worker: false, bridge: true },
  serveMetrics: false,
  wrapStarter: (starter) => ({
    async deliver(delivered) {
      const hold = process.env.TEST_HOLD_ORDERS;
      if (hold && delivered.some((e) => e.orderId.startsWith(hold))) await new Promise<never>(() => {});
      const outcome = await starter.deliver(delivered);
      process.stdout.write(`delivered ${delivered.map((e) => e.eventId).join(' ')}\n`);
      return outcome;
    },
  }),
});
process.on('SIGTERM', () => {
  const t0 = Date.now();
  void app.stop().then(() => process.stdout.write(`stopped ${Date.now() - t0}\n`, () => process.exit(0)));
});
process.stdout.write('ready\n');
