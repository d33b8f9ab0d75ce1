/**
 * A TCP relay a test can cut: a process pointed at it reaches the target through it, until cut() drops every
 * connection and refuses new ones (a network partition between that process and the target, the target itself
 * untouched, so the rest of the suite keeps it); restore() lets connections through again.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface TcpCut {
  /** host:port to give the process instead of the target's. */
  address: string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function tcpCut(target: { host: string; port: number }): Promise<TcpCut> {
  const open = new Set<Socket>();
  let cut = false;
  const server = createServer((client) => {
    if (cut) return client.destroy();
    const upstream = connect(target.port, target.host);
    open.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    cut() {
      cut = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
