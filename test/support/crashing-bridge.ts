/**
 * A bridge that is killed (SIGKILL, no cleanup) right after Temporal accepted its first event and before the
 * offset could be committed — the crash window the dedupe layers exist for. Run by redelivery.int.test.ts.
 */
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/base/config.js';
import { createLogger } from '../../src/base/log.js';

await startApp(loadConfig(), {
  logger: createLogger('silent'),
  roles: { worker: false, bridge: true },
  serveMetrics: false,
  wrapStarter: (starter) => ({
    async deliver(delivered) {
      const outcome = await starter.deliver(delivered);
      process.stdout.write(`delivered ${delivered.map((e) => e.eventId).join(' ')}\n`, () =>
        process.kill(process.pid, 'SIGKILL'),
      );
      await new Promise(() => undefined); // never reaches the commit
      return outcome;
    },
  }),
});
process.stdout.write('ready\n');
