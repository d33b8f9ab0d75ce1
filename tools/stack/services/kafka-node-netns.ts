/**
 * The cluster's nodes each in a network namespace of its own (STACK_KAFKA_NETNS=1), so that one can be cut off by the
 * network rather than killed: node n's namespace is linked to the stack's by a virtual cable (a veth pair), the
 * stack's end 198.18.n.1, the node's 198.18.n.2, the node's default route through the stack's end; the stack's
 * namespace forwards between the cables. `cut` takes the stack's end of a node's cable down — the node keeps running
 * and sees nobody, nobody sees it — and `restore` brings it up again. Needs root and `ip`. Made by `up`, removed by
 * `down`; the namespace the stack runs in gets IPv4 forwarding on (run it in a namespace of its own, as the suite's
 * failover lane does, rather than on a host whose forwarding matters).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { nodeNetnsAddress, type StackPlan } from '../addresses.js';
import { StackError } from '../log.js';
import { stateDir } from '../paths.js';
import { runQuick } from '../proc.js';

const tag = () => createHash('sha256').update(stateDir()).digest('hex').slice(0, 6);
/** Node `id`'s namespace. */
export const nodeNamespace = (id: number): string => `fk${tag()}n${id}`;
/** The stack's end of node `id`'s cable (an interface name fits 15 characters). */
const cable = (id: number): string => `fk${tag()}v${id}`;

function ip(args: string[], what: string): string {
  const r = runQuick('ip', args);
  if (r.status !== 0) throw new StackError(`kafka: ${what} failed (ip ${args.join(' ')}): ${r.output.trim()}`);
  return r.output;
}

/** Makes every node's namespace and cable (idempotent), with the cables up. */
export function ensureNodeNamespaces(plan: StackPlan): void {
  if (process.getuid?.() !== 0) throw new StackError('STACK_KAFKA_NETNS=1 needs root (it makes network namespaces)');
  for (const { id } of plan.kafka.nodes) {
    const ns = nodeNamespace(id);
    if (!existsSync(`/var/run/netns/${ns}`)) ip(['netns', 'add', ns], `making namespace ${ns}`);
    ip(['-n', ns, 'link', 'set', 'lo', 'up'], `bringing up ${ns}'s loopback`);
    if (runQuick('ip', ['link', 'show', cable(id)]).status !== 0)
      ip(['link', 'add', cable(id), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns], `making node ${id}'s cable`);
    ip(['addr', 'replace', `${nodeNetnsAddress(id, 1)}/24`, 'dev', cable(id)], 'addressing the stack end');
    ip(['link', 'set', cable(id), 'up'], `plugging node ${id}'s cable in`);
    ip(['-n', ns, 'addr', 'replace', `${nodeNetnsAddress(id)}/24`, 'dev', 'eth0'], "addressing the node's end");
    ip(['-n', ns, 'link', 'set', 'eth0', 'up'], "bringing the node's end up");
    ip(['-n', ns, 'route', 'replace', 'default', 'via', nodeNetnsAddress(id, 1)], "the node's route");
  }
  writeFileSync('/proc/sys/net/ipv4/ip_forward', '1\n');
}

/** Removes every node namespace this stack made (its cable goes with it), whatever STACK_KAFKA_NETNS says now. */
export function removeNodeNamespaces(): void {
  let names: string[] = [];
  try {
    names = readdirSync('/var/run/netns');
  } catch {
    return;
  }
  for (const ns of names) if (ns.startsWith(`fk${tag()}n`)) runQuick('ip', ['netns', 'delete', ns]);
}

/** Takes node `id`'s cable down (`cut`) or up again (`restore`). */
export function setNodeLink(id: number, state: 'cut' | 'restore'): void {
  ip(
    ['link', 'set', cable(id), state === 'cut' ? 'down' : 'up'],
    `${state === 'cut' ? 'cutting' : 'restoring'} node ${id}'s link`,
  );
}

/** True while node `id`'s cable is down. */
export function nodeLinkCut(id: number): boolean {
  const r = runQuick('ip', ['-o', 'link', 'show', cable(id)]);
  return r.status === 0 && !/[<,]UP[,>]/.test(r.output);
}
