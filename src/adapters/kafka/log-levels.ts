/**
 * The level a kafkajs log entry deserves in this service's log. kafkajs logs the ordinary churn of a consumer group —
 * a rebalance, a member the coordinator no longer knows, a coordinator moving — at error or warn level, although it
 * handles each itself (it rejoins) and the bridge sees it as MembershipLost; an operator reading `level: 50` would
 * take it for trouble. Those go to info, and so does the warning an idempotent producer (the status relay's, a
 * redrive's) gets for its capped retries: the cap is deliberate, so that an outage reaches the caller's own backoff,
 * which sends the same records again (consumers dedupe them by id). Everything else keeps the level kafkajs gave it, and kafkajs's own info and
 * debug chatter stays at debug.
 */
import { logLevel, type LogEntry } from 'kafkajs';

/** What kafkajs says when a group's membership changes under a member, as it is meant to. */
const EXPECTED_CHURN = [
  /the group is rebalancing/i,
  /re-?joining the group/i,
  /coordinator is not aware of this member/i,
  /not the correct coordinator/i,
  /coordinator is (loading|not available)/i,
  /specified group generation id is not valid/i,
  /limiting retries for the idempotent producer/i,
];

export type LogLevelName = 'error' | 'warn' | 'info' | 'debug';

export function kafkajsLogLevel(entry: Pick<LogEntry, 'level' | 'log'>): LogLevelName {
  if (entry.level !== logLevel.ERROR && entry.level !== logLevel.WARN) return 'debug';
  const text = `${entry.log.message} ${typeof entry.log.error === 'string' ? entry.log.error : ''}`;
  if (EXPECTED_CHURN.some((re) => re.test(text))) return 'info';
  return entry.level === logLevel.ERROR ? 'error' : 'warn';
}
