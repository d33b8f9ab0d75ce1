/**
 * `node --import tsx tools/stack/jwks-launcher.ts <jwks-file> <host> <port> -- <command> [args...]`
 *
 * Serves the JSON Web Key Set in <jwks-file> on `http://<host>:<port>/` (any path; the file is read on every request,
 * so a new key is served at once) and, once it listens, runs <command> as its child, in its process group. The
 * Temporal server reads its key set when it starts, so the set must be served first: this is what orders the two.
 * SIGTERM and SIGINT go on to the child; when the child exits, so does this process, with its exit code.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';

function fail(message: string): never {
  process.stderr.write(`[jwks-launcher] ${message}\n`);
  process.exit(2);
}

const [file, host, portText, separator, command, ...args] = process.argv.slice(2);
if (!file || !host || !portText || separator !== '--' || !command)
  fail('usage: jwks-launcher.ts <jwks-file> <host> <port> -- <command> [args...]');

const server = createServer((req, res) => {
  if (req.method !== 'GET') {
    res.writeHead(405).end();
    return;
  }
  readFile(file).then(
    (body) => res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body),
    (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`cannot read ${file}: ${String(err)}`),
  );
});
server.on('error', (err) => fail(`cannot serve the key set on ${host}:${portText}: ${err.message}`));
server.listen(Number(portText), host, () => {
  process.stdout.write(`[jwks-launcher] serving ${file} on http://${host}:${portText}/; starting ${command}\n`);
  const child = spawn(command, args, { stdio: 'inherit' });
  child.on('error', (err) => fail(`cannot start ${command}: ${err.message}`));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    server.close();
    process.exit(code ?? (signal ? 1 : 0));
  });
});
