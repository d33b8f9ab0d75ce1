/**
 * A kafkajs client on the real broker whose connections the test holds in hand: it counts the connections open to
 * the broker, can hold the broker's answers unread while requests still reach it (a request neither answered nor
 * failed, as on a connection that went silent), and can drop every connection and refuse new ones (a cut network).
 * Under kafkajs's socket factory, so that every connection is seen, the seed broker's and the leaders' alike.
 */
import { connect, Socket } from 'node:net';
import { Kafka, logLevel, type ISocketFactory } from 'kafkajs';
import type { Config } from '../../src/base/config.js';
import { KAFKA_RETRY } from '../../src/base/retry-policies.js';

export interface KafkaSockets {
  /** A client whose connections these are. */
  kafka: Kafka;
  /** Connections to the broker open now. */
  open(): number;
  /** Connections made so far. */
  made(): number;
  /** From now on no answer is read, on the connections open now and on new ones; requests still go out. */
  holdAnswers(): void;
  /** Drops every connection; new ones are refused until restore(). */
  cut(): void;
  /** Lets new connections through again, their answers read. */
  restore(): void;
}

export function kafkaSockets(config: Pick<Config, 'KAFKA_BROKERS'>, clientId: string): KafkaSockets {
  const open = new Set<Socket>();
  let made = 0;
  let refusing = false;
  let holding = false;

  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    if (refusing) {
      const refused = new Socket();
      const err = Object.assign(new Error(`connect ECONNREFUSED ${host}:${port} (cut)`), { code: 'ECONNREFUSED' });
      process.nextTick(() => refused.destroy(err));
      return refused;
    }
    const socket = connect({ host, port }, onConnect);
    made += 1;
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.setKeepAlive(true, 60_000);
    // Paused before kafkajs listens for data, the socket stays paused: its answers wait unread.
    if (holding) socket.pause();
    return socket;
  };

  return {
    kafka: new Kafka({
      clientId,
      brokers: config.KAFKA_BROKERS,
      logLevel: logLevel.NOTHING,
      socketFactory,
      retry: {
        initialRetryTime: KAFKA_RETRY.initialRetryTime,
        retries: KAFKA_RETRY.requests,
        maxRetryTime: KAFKA_RETRY.maxRetryTime,
      },
    }),
    open: () => open.size,
    made: () => made,
    holdAnswers() {
      holding = true;
      for (const socket of open) socket.pause();
    },
    cut() {
      refusing = true;
      // With an error, as a reset connection ends: kafkajs fails a connection's requests on its error, not its close.
      const reset = () => Object.assign(new Error('read ECONNRESET (cut)'), { code: 'ECONNRESET' });
      for (const socket of open) socket.destroy(reset());
    },
    restore() {
      refusing = false;
      holding = false;
    },
  };
}
