/**
 * What a `dlq redrive` run will do, decided before anything is sent: its options and result, the dead letters it
 * selects (one per origin, by position, filter or `--all`; values read only for those that may be sent), and each
 * one's step — skipped (no value, or redriven already), refused (still malformed) or sent.
 */
import type { PayloadKeys } from '../../base/config/payload-keys.js';
import { MalformedEventError } from '../../base/errors.js';
import type { Kafka } from '../../adapters/kafka/client.js';
import type { CliContext } from '../context.js';
import type { cliKafka } from '../kafka.js';
import { formatPosition, type Position } from '../position.js';
import { displayText } from '../redact.js';
import type { Clock } from '../token-bucket.js';
import { allCopies, groupCopies, summarizeCopies, type DeadLetterCopies, type DeadLetterSummary } from './copies.js';
import { matches, type DlqFilter } from './filter.js';
import { redriveLogKey, readRedriveLog, type RedriveLogEntry } from './redrive-log.js';
import { readDlq } from './reader.js';
import type { DlqRecord } from './record.js';
import { revalidate, unredrivable, type Verdict } from './redriven-record.js';
import type { DlqSelection } from './selection.js';

/** What to redrive (`ids`, `filter` or `all`: selection.ts) and how. */
export interface DlqRedriveOptions extends DlqSelection {
  /** Records per second. Default 10. */
  rate?: number;
  /** Print what would be sent; send nothing. */
  dryRun?: boolean;
  /** Send dead letters the edge parser still refuses (malformed) anyway. */
  force?: boolean;
  /** Send dead letters the redrive log says were redriven already. */
  again?: boolean;
  /** Who runs it, for the audit line and the redrive log. Default: the OS user (audit.ts defaultOperator). */
  operator?: string;
  clock?: Clock;
}

export interface RedriveResult {
  dryRun: boolean;
  operator: string;
  /** The redrive log consulted and written (`<DLQ_TOPIC>.redrives`). */
  redriveLogTopic: string;
  /** The dead letters chosen, one per origin, in DLQ order; skipped and refused ones included. */
  selected: DeadLetterSummary[];
  /** What was published: DLQ position → orders topic position, and what the edge parser made of it. Empty on a dry run. */
  sent: { from: string; to: string; verdict: Verdict; forced: boolean }[];
  /** What would be published (a dry run) or was meant to be (a real run), with the verdict. */
  planned: { position: string; verdict: Verdict; forced: boolean }[];
  /** Dead letters whose value the DLQ does not hold (also on a dry run), with why. */
  skipped: { position: string; reason: string }[];
  /** Dead letters not sent because the redrive log says they were redriven already (no `--again`). */
  alreadyRedriven: { position: string; at: string; operator: string; to: string }[];
  /** Dead letters refused because the edge parser still refuses them (no `--force`): the field ('' for the whole value) and why. */
  refused: { position: string; field: string; reason: string }[];
  /** Positions of the copies not sent because their origin's dead letter was chosen. */
  folded: string[];
}

/** What a run does with one dead letter. */
export type Step =
  | { kind: 'no-value'; reason: string }
  | { kind: 'already'; entry: RedriveLogEntry }
  | { kind: 'refuse'; field: string; reason: string }
  | { kind: 'send'; verdict: Verdict; note: string };

/** A run's settings, resolved from its options, and the result its steps fill in. */
export interface RunPlan {
  rate: number;
  dryRun: boolean;
  force: boolean;
  again: boolean;
  operator: string;
  target: string;
  redriveLogTopic: string;
  filter: DlqFilter;
  result: RedriveResult;
}

/** One dead letter of a run: the record sent (its first copy), what is shown of it, and what is done with it. */
export interface Planned {
  record: DlqRecord;
  summary: DeadLetterSummary;
  step: Step;
}

/**
 * Reads the redrive log and the selected dead letters (by position, or by filter among those not redriven yet), and
 * decides each one's step, into the result's lists; undefined when nothing matches. Values come back decrypted
 * (reader.ts): a redriven record carries the original bytes.
 */
export async function planRun(
  { config }: CliContext,
  kafka: ReturnType<typeof cliKafka>,
  opts: DlqRedriveOptions,
  p: RunPlan,
): Promise<Planned[] | undefined> {
  const { result } = p;
  const read = {
    kafka,
    topic: config.DLQ_TOPIC,
    clientId: `${config.KAFKA_CLIENT_ID}-cli`,
    encryption: config.payloadEncryption,
  };
  const redriveLog = await readRedriveLog(kafka, p.redriveLogTopic, read.clientId);
  const recorded = (g: DeadLetterCopies) => (p.again ? undefined : redriveLog.get(redriveLogKey(g.deadLetter)));
  const groups = opts.ids?.length
    ? groupCopies((await readDlq({ ...read, positions: dedupe(opts.ids) })).records)
    : await selectGroups(
        read,
        opts.all ? undefined : p.filter,
        (g) => unredrivable(g.deadLetter) === undefined && recorded(g) === undefined,
      );
  result.selected = groups.map(summarizeCopies);
  result.folded = result.selected.flatMap((s) => s.copyPositions);
  if (groups.length === 0) return undefined;
  const plan = groups.map((g, i) => ({
    record: g.deadLetter,
    summary: result.selected[i]!,
    step: stepOf(g, recorded(g), p.target, p.force),
  }));
  for (const { summary: s, step } of plan) {
    if (step.kind === 'no-value') result.skipped.push({ position: s.position, reason: step.reason });
    else if (step.kind === 'already')
      result.alreadyRedriven.push({
        position: s.position,
        at: step.entry.at,
        operator: step.entry.operator,
        to: step.entry.to,
      });
    else if (step.kind === 'refuse')
      result.refused.push({ position: s.position, field: step.field, reason: step.reason });
    else result.planned.push({ position: s.position, verdict: step.verdict, forced: step.verdict === 'malformed' });
  }
  return plan;
}

/** The step for one dead letter: skipped (no value, or redriven already), refused (still malformed) or sent. */
function stepOf(g: DeadLetterCopies, recorded: RedriveLogEntry | undefined, target: string, force: boolean): Step {
  const noValue = unredrivable(g.deadLetter);
  if (noValue !== undefined) return { kind: 'no-value', reason: noValue };
  if (recorded) return { kind: 'already', entry: recorded };
  const verdict = revalidate(g.deadLetter, target);
  if (verdict.kind === 'order-event') return { kind: 'send', verdict: 'order-event', note: '' };
  if (verdict.kind === 'unknown-type')
    return {
      kind: 'send',
      verdict: 'unknown-type',
      note: `  type ${displayText(verdict.type)} is unknown to the bridge: it will be ignored`,
    };
  const field = verdict.error instanceof MalformedEventError ? verdict.error.field : '';
  if (!force) return { kind: 'refuse', field, reason: verdict.error.message };
  return { kind: 'send', verdict: 'malformed', note: `  forced: still malformed (${verdict.error.message})` };
}

/**
 * The dead letters a filter selects (every one without a filter), grouped by origin over the whole DLQ. The DLQ is
 * read twice: headers only to group and select, then the values of just the dead letters `needsValue` names (those
 * that may be sent).
 */
async function selectGroups(
  read: { kafka: Kafka; topic: string; clientId: string; encryption: PayloadKeys | undefined },
  filter: DlqFilter | undefined,
  needsValue: (g: DeadLetterCopies) => boolean,
): Promise<DeadLetterCopies[]> {
  const index = await readDlq({ ...read, headersOnly: true });
  const groups = groupCopies(index.records).filter(
    (g) => filter === undefined || allCopies(g).some((r) => matches(filter, r)),
  );
  const wanted = groups
    .filter(needsValue)
    .map((g) => ({ partition: g.deadLetter.partition, offset: BigInt(g.deadLetter.offset) }));
  if (wanted.length === 0) return groups;
  const full = new Map(
    (await readDlq({ ...read, positions: wanted })).records.map((r) => [formatPosition(r.partition, r.offset), r]),
  );
  return groups.map((g) => ({
    ...g,
    deadLetter: full.get(formatPosition(g.deadLetter.partition, g.deadLetter.offset)) ?? g.deadLetter,
  }));
}

function dedupe(ids: Position[]): Position[] {
  const seen = new Map<string, Position>();
  for (const p of ids) seen.set(formatPosition(p.partition, p.offset), p);
  return [...seen.values()];
}
