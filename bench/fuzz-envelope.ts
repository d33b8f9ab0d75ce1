/**
 * `npm run fuzz` — the envelope's trust-boundary property (test/support/envelope-property.ts) over many more
 * cases than the unit test: mutated valid events, arbitrary JSON, arbitrary bytes and deep nesting, and valid
 * events, which must all be accepted. Prints how the cases ended and the ten fields most often malformed; exits
 * 1 with the (shrunk) counterexample when the property breaks.
 *
 * Options: --runs 1000000 (cases)  --seed N (default random; printed, so a run can be replayed)
 *          --generators mutated,json,bytes,valid (default all).
 */
import { parseArgs } from 'node:util';
import {
  GENERATORS,
  runEnvelopeProperty,
  type GeneratorCounts,
  type GeneratorName,
} from '../test/support/envelope-property.js';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '1000000' },
    seed: { type: 'string' },
    generators: { type: 'string', default: GENERATORS.join(',') },
  },
});

const runs = Number(args.runs);
const seed = args.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(args.seed);
const generators = args.generators.split(',').map((g) => g.trim());
if (!Number.isSafeInteger(runs) || runs < 1) throw new Error('--runs must be a positive integer');
if (!Number.isSafeInteger(seed)) throw new Error('--seed must be an integer');
const unknownGenerator = generators.find((g) => !(GENERATORS as readonly string[]).includes(g));
if (unknownGenerator !== undefined)
  throw new Error(`--generators: unknown generator ${unknownGenerator}; known: ${GENERATORS.join(', ')}`);

/** Groups malformed fields: array indices as `[]`, anything inside the free-form address under one entry. */
function fieldGroup(field: string): string {
  if (field === '') return '(whole value)';
  const grouped = field.replace(/\[\d+\]/g, '[]');
  return grouped.startsWith('data.shippingAddress') && grouped !== 'data.shippingAddress'
    ? 'data.shippingAddress.<path>'
    : grouped;
}

const pad = (n: number) => String(n).padStart(9);
const summary = (c: GeneratorCounts) =>
  `${pad(c.total)} cases: ${pad(c.accepted)} accepted, ${pad(c.unknownType)} unknown type, ${pad(c.malformed)} malformed`;

const started = performance.now();
const result = runEnvelopeProperty({ numRuns: runs, seed, generators: generators as GeneratorName[] });
const seconds = (performance.now() - started) / 1000;

const groups = new Map<string, number>();
for (const [field, n] of result.malformedFields)
  groups.set(fieldGroup(field), (groups.get(fieldGroup(field)) ?? 0) + n);
const top = [...groups].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 10);

console.log(
  `envelope fuzz: seed ${seed}, ${runs} runs requested (replay: npm run fuzz -- --runs ${runs} --seed ${seed})`,
);
console.log(`  total cases            ${pad(result.total.total)}`);
console.log(`  accepted order events  ${pad(result.total.accepted)}`);
console.log(`  unknown types          ${pad(result.total.unknownType)}`);
console.log(`  malformed              ${pad(result.total.malformed)}`);
console.log('  by generator:');
for (const g of GENERATORS)
  if (result.byGenerator[g].total > 0) console.log(`    ${g.padEnd(8)} ${summary(result.byGenerator[g])}`);
console.log('  top malformed fields:');
for (const [field, n] of top) console.log(`    ${pad(n)}  ${field}`);
console.log(`  ${seconds.toFixed(1)} s, ${Math.round(result.total.total / seconds)} cases/s`);
if (result.failure) {
  console.error(`COUNTEREXAMPLE (the counts above include shrinking):\n${result.failure}`);
  process.exitCode = 1;
} else console.log('  no counterexample');
