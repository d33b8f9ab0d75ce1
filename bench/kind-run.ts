/** One Temporal kind's run of the bench: what the stack runs, and every phase's result per repetition. */
import type { PhaseResult } from './phases.js';

export interface KindRun {
  kind: string;
  /** What the stack said it runs. */
  runs: string;
  concurrency: number;
  /** reps[r][phase] */
  reps: Record<string, PhaseResult>[];
  memory?: PhaseResult;
}
