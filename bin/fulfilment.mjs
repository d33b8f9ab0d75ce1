#!/usr/bin/env node
// Launcher of the `fulfilment` CLI: registers tsx's ESM loader, then runs src/cli/main.ts (TypeScript, no build step).
import process from 'node:process';
import { URL } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const { main } = await import(new URL('../src/cli/main.ts', import.meta.url).href);
await main(process.argv.slice(2));
