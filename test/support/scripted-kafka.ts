/**
 * A scripted Kafka cluster for client tests: one TCP listener per node on 127.0.0.1, speaking just enough of the
 * Kafka protocol for a producer (ApiVersions v0–v2, Metadata v0, Produce v3). Which node leads which partition is the
 * test's to say and to move; a node asked to write a partition it does not lead answers NOT_LEADER_FOR_PARTITION, as
 * a real broker does; a test can hold a node's answer until something else happened. Every partition of every Produce
 * request is logged with the node that got it and its answer, so a test sees exactly what the client sent where. The
 * wire format is written here from the protocol's description, not taken from the client under test.
 */
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

const API_PRODUCE = 0;
const API_METADATA = 3;
const API_VERSIONS = 18;
export const NONE = 0;
export const UNKNOWN_TOPIC_OR_PARTITION = 3;
export const NOT_LEADER_FOR_PARTITION = 6;
const UNSUPPORTED_VERSION = 35;
/** Where a v2 record batch keeps its record count: after base offset … base sequence (8+4+4+1+4+2+4+8+8+8+2+4). */
const RECORD_COUNT_AT = 57;

/** One partition of one Produce request, as a node received and answered it. */
export interface Produced {
  node: number;
  topic: string;
  partition: number;
  records: number;
  errorCode: number;
}

export interface ScriptedKafka {
  /** `127.0.0.1:<port>` of a node. */
  address(node: number): string;
  /** Makes `node` the leader of a partition, in what every node answers from now on. */
  moveLeader(topic: string, partition: number, node: number): void;
  /** Awaited by a node before it answers a Produce request holding these partitions (the whole request waits). */
  beforeProduceAnswer?: (
    node: number,
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
  ) => Promise<void>;
  /** Every partition of every Produce request so far, in the order the answers were written. */
  readonly produced: ReadonlyArray<Produced>;
  /** Resolves once `node` has written its answer for a partition (at once if it already has). */
  answered(node: number, topic: string, partition: number): Promise<void>;
  /** Records appended to a partition, whichever node appended them. */
  written(topic: string, partition: number): number;
  close(): Promise<void>;
}

/** `leaders[topic][partition]` is the node that leads it at first. */
export async function scriptedKafka(nodes: number[], leaders: Record<string, number[]>): Promise<ScriptedKafka> {
  const leader = new Map<string, number>();
  const log = new Map<string, number>();
  for (const [topic, ofPartitions] of Object.entries(leaders))
    ofPartitions.forEach((n, partition) => leader.set(`${topic}:${partition}`, n));
  const produced: Produced[] = [];
  const waiting: Array<{ node: number; key: string; resolve: () => void }> = [];
  const servers = new Map<number, { server: Server; port: number }>();
  const sockets = new Set<Socket>();

  const metadata = (topics: string[]): Writer => {
    const w = new Writer();
    w.array([...servers], (w, [nodeId, { port }]) => w.int32(nodeId).string('127.0.0.1').int32(port));
    const asked = topics.length > 0 ? topics : Object.keys(leaders);
    w.array(asked, (w, topic) => {
      const count = leaders[topic]?.length;
      w.int16(count === undefined ? UNKNOWN_TOPIC_OR_PARTITION : NONE).string(topic);
      w.array(
        Array.from({ length: count ?? 0 }, (_, p) => p),
        (w, p) => {
          const n = leader.get(`${topic}:${p}`) ?? -1;
          w.int16(NONE)
            .int32(p)
            .int32(n)
            .array(nodes, (w, r) => w.int32(r))
            .array(nodes, (w, r) => w.int32(r));
        },
      );
    });
    return w;
  };

  const produce = async (node: number, r: Reader): Promise<Writer | undefined> => {
    r.nullableString(); // transactional id
    const acks = r.int16();
    r.int32(); // timeout
    const topics = r.array((r) => ({
      topic: r.string(),
      partitions: r.array((r) => ({ partition: r.int32(), records: r.bytes().readInt32BE(RECORD_COUNT_AT) })),
    }));
    const partitions = topics.flatMap(({ topic, partitions }) => partitions.map((p) => ({ topic, ...p })));
    await kafka.beforeProduceAnswer?.(node, partitions);
    const answers = partitions.map(({ topic, partition, records }) => {
      const key = `${topic}:${partition}`;
      const errorCode = !leader.has(key)
        ? UNKNOWN_TOPIC_OR_PARTITION
        : leader.get(key) === node
          ? NONE
          : NOT_LEADER_FOR_PARTITION;
      const baseOffset = log.get(key) ?? 0;
      if (errorCode === NONE) log.set(key, baseOffset + records);
      return { topic, partition, records, errorCode, baseOffset };
    });
    const onWritten = () => {
      for (const a of answers) {
        produced.push({ node, topic: a.topic, partition: a.partition, records: a.records, errorCode: a.errorCode });
        const key = `${a.topic}:${a.partition}`;
        for (const w of waiting.filter((w) => w.node === node && w.key === key)) {
          waiting.splice(waiting.indexOf(w), 1);
          w.resolve();
        }
      }
    };
    if (acks === 0) {
      onWritten();
      return undefined;
    }
    const w = new Writer().array(topics, (w, { topic }) =>
      w.string(topic).array(
        answers.filter((a) => a.topic === topic),
        (w, a) => w.int32(a.partition).int16(a.errorCode).int64(a.baseOffset).int64(-1),
      ),
    );
    return Object.assign(w.int32(0), { onWritten });
  };

  const answer = async (node: number, frame: Buffer): Promise<(Writer & { onWritten?: () => void }) | undefined> => {
    const r = new Reader(frame);
    const apiKey = r.int16();
    const version = r.int16();
    r.int32(); // correlation id, read again by the caller
    r.nullableString(); // client id
    if (apiKey === API_VERSIONS) {
      const supported: Array<[number, number, number]> = [
        [API_PRODUCE, 3, 3],
        [API_METADATA, 0, 0],
        [API_VERSIONS, 0, 2],
      ];
      const w = new Writer().int16(version > 2 ? UNSUPPORTED_VERSION : NONE);
      w.array(supported, (w, [key, min, max]) => w.int16(key).int16(min).int16(max));
      return version >= 1 ? w.int32(0) : w;
    }
    if (apiKey === API_METADATA && version === 0) return metadata(r.array((r) => r.string()));
    if (apiKey === API_PRODUCE && version === 3) return produce(node, r);
    throw new Error(`scripted Kafka: no answer for API ${apiKey} v${version}`);
  };

  const serve = (node: number) => (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    // Requests on one connection are answered in order, as a broker does.
    let queue = Promise.resolve();
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const frame = pending.subarray(4, 4 + pending.readInt32BE(0));
        pending = pending.subarray(4 + frame.length);
        queue = queue.then(async () => {
          const body = await answer(node, frame);
          if (!body) return;
          const payload = new Writer().int32(frame.readInt32BE(4)).bytesRaw(body.buffer());
          socket.write(Buffer.concat([int32(payload.buffer().length), payload.buffer()]), () => body.onWritten?.());
        });
      }
    });
  };

  for (const n of nodes) {
    const server = createServer(serve(n));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    servers.set(n, { server, port: (server.address() as AddressInfo).port });
  }

  const kafka: ScriptedKafka = {
    address: (n) => `127.0.0.1:${servers.get(n)?.port}`,
    moveLeader: (topic, partition, n) => void leader.set(`${topic}:${partition}`, n),
    produced,
    answered: (n, topic, partition) =>
      produced.some((p) => p.node === n && p.topic === topic && p.partition === partition)
        ? Promise.resolve()
        : new Promise((resolve) => waiting.push({ node: n, key: `${topic}:${partition}`, resolve })),
    written: (topic, partition) => log.get(`${topic}:${partition}`) ?? 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all([...servers.values()].map(({ server }) => new Promise((r) => server.close(r))));
    },
  };
  return kafka;
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

/** Big-endian primitives of the Kafka protocol, appended in order. */
class Writer {
  private parts: Buffer[] = [];
  int16(n: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(n);
    return this.bytesRaw(b);
  }
  int32(n: number): this {
    return this.bytesRaw(int32(n));
  }
  int64(n: number): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(n));
    return this.bytesRaw(b);
  }
  string(s: string): this {
    const b = Buffer.from(s, 'utf8');
    return this.int16(b.length).bytesRaw(b);
  }
  array<T>(items: Iterable<T>, each: (w: this, item: T) => unknown): this {
    const list = [...items];
    this.int32(list.length);
    for (const item of list) each(this, item);
    return this;
  }
  bytesRaw(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  buffer(): Buffer {
    return Buffer.concat(this.parts);
  }
}

class Reader {
  private at = 0;
  constructor(private readonly b: Buffer) {}
  int16(): number {
    const n = this.b.readInt16BE(this.at);
    this.at += 2;
    return n;
  }
  int32(): number {
    const n = this.b.readInt32BE(this.at);
    this.at += 4;
    return n;
  }
  nullableString(): string | null {
    const length = this.int16();
    if (length < 0) return null;
    const s = this.b.toString('utf8', this.at, this.at + length);
    this.at += length;
    return s;
  }
  string(): string {
    return this.nullableString() ?? '';
  }
  bytes(): Buffer {
    const length = this.int32();
    const b = this.b.subarray(this.at, this.at + length);
    this.at += length;
    return b;
  }
  array<T>(each: (r: this) => T): T[] {
    return Array.from({ length: this.int32() }, () => each(this));
  }
}
