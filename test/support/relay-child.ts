/**
 * A status relay in a process of its own (config from the environment, as the service reads it), for a test that kills
 * it with SIGKILL between publishing a batch and marking it sent: once a batch is on the topic it prints one JSON
 * line `{"published": [eventIds]}` and waits forever, so the kill lands exactly there.
 */
import { loadConfig } from '../../src/base/config.js';
import { createKafka } from '../../src/adapters/kafka/client.js';
import { createSender } from '../../src/adapters/kafka/sender.js';
import { createLogger } from '../../src/base/log.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { startStatusRelay } from '../../src/adapters/status-events/relay.js';

const config = loadConfig(process.env);
const logger = createLogger('warn', 'relay-child', 'json');
startStatusRelay({
  connection: runtimeConnection(config),
  topic: config.STATUS_TOPIC,
  sender: createSender(createKafka(config, logger, { clientId: 'status-relay-child' }), { idempotent: true }),
  batch: 50,
  pollMs: 100,
  logger,
  afterPublish: async (rows) => {
    process.stdout.write(`${JSON.stringify({ published: rows.map((r) => r.eventId) })}\n`);
    await new Promise(() => undefined);
  },
});
