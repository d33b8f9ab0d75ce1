#!/usr/bin/env node
// Launcher of the `fulfilment` CLI. In production (NODE_ENV=production, as in the image) it runs the JavaScript
// `npm run build` emitted, dist/src/cli/main.js; elsewhere the sources, src/cli/main.ts, through tsx's ESM loader,
// so a developer's edit is never hidden behind an older build.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const built = new URL('../dist/src/cli/main.js', import.meta.url);
let entry = built;
if (process.env.NODE_ENV !== 'production' || !existsSync(fileURLToPath(built))) {
  const { register } = await import('tsx/esm/api');
  register();
  entry = new URL('../src/cli/main.ts', import.meta.url);
}
const { main } = await import(entry.href);
await main(process.argv.slice(2));
