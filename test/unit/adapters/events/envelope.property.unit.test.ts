import { describe, expect, it } from 'vitest';
import { GENERATORS, runEnvelopeProperty, type GeneratorName } from '../../../support/envelope-property.js';

/** Fixed so every run checks the same cases; `npm run fuzz -- --seed N` explores others. */
const SEED = 20_261_130;
/** Cases per generator: 4 × 5,000 = 20,000 in all. */
const RUNS: Record<GeneratorName, number> = { mutated: 5000, json: 5000, bytes: 5000, valid: 5000 };

describe('envelope property: MalformedEventError, an unknown type, or an event the effects can take', () => {
  it.each(GENERATORS)('holds for %s records', (generator) => {
    const result = runEnvelopeProperty({ numRuns: RUNS[generator], seed: SEED, generators: [generator] });
    expect(result.failure).toBeUndefined();
    const counts = result.byGenerator[generator];
    expect(counts.total).toBe(RUNS[generator]);
    if (generator === 'valid') expect(counts.accepted / counts.total).toBe(1);
    if (generator === 'mutated') expect(counts.malformed / counts.total).toBeGreaterThan(0.5);
  });
});
