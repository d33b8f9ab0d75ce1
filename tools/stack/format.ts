/** Human-readable rendering of StackInfo (the `status` table). */
import { maskUrl, SERVICE_NAMES } from './addresses.js';
import type { StackInfo } from './index.js';

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function formatStatus(info: StackInfo, extra: Record<string, string> = {}): string {
  const s = info.services;
  const dbShown = s.postgres.state === 'external' ? maskUrl(info.databaseUrl) : info.databaseUrl;
  const addresses = table([
    [
      'Kafka brokers',
      `${info.kafkaBrokers.join(',')}${info.kafkaKind === 'cluster' ? '  (three-node cluster: STACK_KAFKA=cluster)' : ''}`,
    ],
    ...(info.kafkaSaslSsl
      ? [
          [
            'Kafka SASL_SSL',
            `${info.kafkaSaslSsl.address}  (${info.kafkaSaslSsl.mechanisms.join(', ')}; user ${info.kafkaSaslSsl.username}, password in ${info.kafkaSaslSsl.passwordFile})`,
          ],
          ['Kafka CA file', info.kafkaSaslSsl.caFile],
        ]
      : []),
    ['Temporal frontend', `${info.temporalAddress}  (namespace ${info.temporalNamespace})`],
    ['Temporal Web UI', info.temporalUiUrl],
    ['Temporal runs', info.temporalRuns],
    [
      'TLS Temporal',
      `${info.temporalTls.address}  (mTLS and API keys, namespace ${info.temporalTls.namespace}; ${info.services['temporal-tls'].state === 'running' ? 'running' : 'on demand: up --only temporal-tls'})`,
    ],
    ['TLS Temporal CA', info.temporalTls.caFile],
    ['TLS Temporal client', `${info.temporalTls.clientCertFile}, key ${info.temporalTls.clientKeyFile}`],
    ['TLS Temporal API key', `${info.temporalTls.apiKeyFile}  (${info.temporalTls.apiKeyPermissions.join(', ')})`],
    ['PostgreSQL', dbShown],
    ['Warehouse', info.warehouseUrl],
    ...Object.entries(extra),
    ['State dir', info.stateDir],
  ]);
  const rows: string[][] = [['SERVICE', 'STATE', 'PID', 'ANSWERS', 'NOTE / LOG']];
  for (const name of SERVICE_NAMES) {
    const v = s[name];
    rows.push([
      name,
      v.state,
      v.pid ? String(v.pid) : '-',
      v.answering === undefined ? '-' : v.answering ? 'yes' : 'no',
      v.note ?? v.log ?? '',
    ]);
  }
  const nodes = info.kafkaNodes
    ? `\n${table([
        ['KAFKA NODE', 'ADDRESS', 'STATE', 'PID', 'LEADS'],
        ...info.kafkaNodes.map((n) => [
          String(n.id),
          n.address,
          n.state,
          n.pid ? String(n.pid) : '-',
          n.leads.length ? n.leads.join(' ') : '-',
        ]),
      ])}\n`
    : '';
  return `${addresses}\n\n${table(rows)}\n${nodes}`;
}
