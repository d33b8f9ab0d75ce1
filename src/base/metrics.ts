/**
 * Prometheus metrics, prefix `fulfilment_`. The names and labels are part of the external contract once
 * released (docs/observability.md lists them; dashboards and alert rules read them): add, never rename. Each process (or test) makes its own registry.
 */
import { createReconcileMetrics, type ReconcileMetrics } from './reconcile-metrics.js';
import { MAX_TENANT_LABELS } from './tenants/tenant-label.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * How the bridge finished one record (fulfilment_bridge_records_total): handed to the order's workflow
 * (`accepted`), the order's run already closed (`stale`), a recent duplicate it skipped (`duplicate`), an unknown
 * type it ignored (`ignored`), or dead-lettered at the edge (`dead-lettered`: malformed, or refused by Temporal).
 */
export type BridgeOutcome = 'accepted' | 'recorded-late' | 'duplicate' | 'ignored' | 'dead-lettered';

export interface Metrics {
  registry: Registry;
  /**
   * Events by type and outcome as the worker decided them (applied, duplicate, stale, dead-lettered, refused):
   * one count per event the workflows decided. The bridge's hand-offs are counted apart (bridgeRecords), so adding
   * up this counter never counts an event twice.
   */
  eventsProcessed: Counter<'type' | 'outcome'>;
  /**
   * Records the bridge finished, by type and outcome (BridgeOutcome). `type` is the event type, `unknown` for a type
   * this consumer does not handle (its name is in unknownTypes), `malformed` for a record that is not a valid event.
   */
  bridgeRecords: Counter<'type' | 'outcome'>;
  /** Retries of transient failures by operation (temporal-signal, dlq-produce, commit, ...). */
  retries: Counter<'operation'>;
  /** Failures by operation and error class, transient and permanent alike. */
  failures: Counter<'operation' | 'error_class'>;
  /** Duplicates suppressed, by the layer that caught them (bridge, workflow, store). */
  duplicatesSuppressed: Counter<'layer'>;
  /**
   * Events of a type this consumer does not handle (never an error), by the type's name: the first
   * MAX_UNKNOWN_TYPE_LABELS distinct names of the process get a label of their own, later ones count as `other`.
   */
  unknownTypes: BoundedLabelCounter;
  /** Records that are not a valid event (dead-lettered at the edge), by the error class that said so. */
  malformedRecords: Counter<'error_class'>;
  /** Orders the worker held as failed (shipping gave up), counted once per hold; a retried order can be held again. */
  ordersHeldFailed: Counter<string>;
  /** Cancelled orders whose shipment the warehouse refused for good to recall (held as recall-failed), once per refusal. */
  ordersRecallFailed: Counter<string>;
  /**
   * Orders of every tenant held for a person now, by status (failed, recall-failed), and how long the oldest has
   * waited: read from the store by each worker every WORKER_ATTENTION_POLL_SECONDS (counts only, no tenant's rows).
   */
  ordersNeedingAttention: Gauge<'status'>;
  ordersNeedingAttentionOldest: Gauge<'status'>;
  /**
   * Orders of every tenant whose shipment waits for the warehouse now (down for everyone, or shipping paused), how
   * many of them an operator's pause holds, and how long the oldest has waited: read from the store by each worker's
   * shipment resumer (counts only, no tenant's rows).
   */
  ordersWaiting: Gauge<string>;
  ordersWaitingPaused: Gauge<string>;
  /** Of the waiting orders, those set aside because the resumer found their run gone (migration 010). */
  ordersWaitingRunGone: Gauge<string>;
  ordersWaitingOldest: Gauge<string>;
  /** Pauses of shipping in force (`fulfilment shipping pause`), as this worker last read them (every 2 s). */
  shippingPauses: Gauge<string>;
  /** This worker's version: 1 while it takes every new order (current, nothing ramping), 0 while it only finishes its own. */
  workerVersion: Gauge<'deployment' | 'build_id'>;
  /**
   * Open runs pinned to a version of the deployment that has no live workers (no poller Temporal lists), per version;
   * 0 for a version with pollers. Read every WORKER_VERSION_CHECK_SECONDS (src/roles/worker/pinned-without-workers.ts).
   */
  ordersPinnedWithoutWorkers: Gauge<'deployment' | 'build_id'>;
  /** Waiting orders this worker's resumer woke, by why: `probe` (to try a warehouse not seen answering), `resume` (it answers). */
  shipmentsResumed: Counter<'reason'>;
  /** Wake-ups the resumer could not send: reason=signal-failed (handed back, sent again), reason=run-gone (no run). */
  wakeUpsFailed: Counter<'reason'>;
  /**
   * Waits a run had to record again because the store no longer held them (reason=row-lost: a restore, a manual fix),
   * or could not record at all (reason=not-recorded: the store refused; reason=not-pending: the store holds the order
   * otherwise); the run then checks again by itself within 30 s.
   */
  waitsUnrecorded: Counter<'reason'>;
  /**
   * Seconds each partition this bridge owns has been parked (paused behind a dependency's backoff) without a break; 0
   * while it flows. Compared with parkedBudget by the alert rule FulfilmentPartitionParked.
   */
  partitionParkedSeconds: Gauge<'group' | 'topic' | 'partition'>;
  /** The bridge's BRIDGE_PARKED_BUDGET_SECONDS: how long a partition may stay parked before it is an alert. */
  parkedBudget: Gauge<string>;
  /**
   * Fields an order event carried that its schema version does not define (dropped by the tolerant reader), by
   * name (`extra`, `data.extra`): the first MAX_UNKNOWN_FIELD_LABELS distinct names of the process get a label of
   * their own, any later one counts as `other`.
   */
  unknownFields: BoundedLabelCounter;
  /**
   * Age in seconds of the oldest message this bridge fetched but has not committed, per group/topic/partition.
   * In-process only: 0 between batches, absent while no bridge runs, blind to backlog nobody fetched. The lag
   * exporter's fulfilment_consumer_lag_oldest_age_seconds is the one to alert on.
   */
  oldestUnprocessedAge: Gauge<'group' | 'topic' | 'partition'>;
  /** Per tenant (src/base/tenants/busiest-tenant-labels.ts): oldest record read, not handed over, by age (0: none). */
  tenantOldestWaiting: Gauge<'tenant'>;
  /** Per tenant (labels as tenantOldestWaiting): this bridge's hand-overs to Temporal in flight now. */
  tenantDeliveriesInFlight: Gauge<'tenant'>;
  /** Seconds from the event's occurredAt to when the worker applied it (applied events only). */
  processingDelay: Histogram<'type'>;
  /** Circuit breaker state per dependency: 0 closed, 1 half-open, 2 open. */
  circuitState: Gauge<'dependency'>;
  /** Times a dependency's circuit opened: a gauge read now and then can miss a short opening, this cannot. */
  circuitOpened: Counter<'dependency'>;
  /**
   * This worker's warehouse slots (WAREHOUSE_MAX_CONCURRENT_CALLS) by tenant and state: `in-use` (a call out) and
   * `waiting` (a call waiting for one). The tenant label is bounded (tenants/tenant-label.ts): the rest are `other`.
   */
  warehouseSlots: Gauge<'tenant' | 'state'>;
  /** Dedupe-ledger rows deleted by the retention schedule, across tenants. */
  ledgerPruned: Counter<string>;
  /**
   * Seconds since the oldest unsent status-outbox row of the topic was committed (0 when none waits), the database's
   * clock, read by every worker that runs the relay every STATUS_RELAY_POLL_MS. FulfilmentStatusRelayLagging alerts on it.
   */
  statusRelayLag: Gauge<'topic'>;
  /** 1 while this worker's relay leads the topic (publishes), 0 while it stands by or has lost its database session. */
  statusRelayLeading: Gauge<'topic'>;
  /** Status events this relay published (a republished copy counts again). */
  statusEventsPublished: Counter<'topic' | 'type'>;
  /** The relay's failed rounds, by the dependency that failed (kafka, postgres); each is followed by a backoff. */
  statusRelayFailures: Counter<'topic' | 'dependency'>;
  /** Sent status-outbox rows deleted by the retention schedule, across tenants. */
  statusOutboxPruned: Counter<string>;
  /** The worker's continuous reconciliation: mismatches and unseen parts of its last complete pass, its staleness. */
  reconcile: ReconcileMetrics;
}

/** Distinct `field` labels of fulfilment_unknown_fields_total per process; later names count as `other`. */
export const MAX_UNKNOWN_FIELD_LABELS = 20;
/** Distinct `type` labels of fulfilment_unknown_event_types_total per process; later names count as `other`. */
export const MAX_UNKNOWN_TYPE_LABELS = 20;

/** A counter with one label whose values are bounded: the first `max` distinct values, then `other`. */
export interface BoundedLabelCounter {
  inc(value: string): void;
}

function boundedLabelCounter<L extends string>(counter: Counter<L>, label: L, max: number): BoundedLabelCounter {
  const labelled = new Set<string>();
  return {
    inc(value) {
      if (!labelled.has(value) && labelled.size < max) labelled.add(value);
      counter.inc({ [label]: labelled.has(value) ? value : 'other' } as Partial<Record<L, string>>);
    },
  };
}

/** Over 80 lines: one declaration per metric, each with its help text — a list, not logic. */
export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'fulfilment_process_' });
  const registers = [registry];
  return {
    registry,
    eventsProcessed: new Counter({
      name: 'fulfilment_events_processed_total',
      help: "Order events by type and outcome as decided, once each (applied, duplicate, stale, dead-lettered, refused): by the workflows, or by the store for an event whose run had closed; the bridge's hand-offs are fulfilment_bridge_records_total.",
      labelNames: ['type', 'outcome'],
      registers,
    }),
    bridgeRecords: new Counter({
      name: 'fulfilment_bridge_records_total',
      help: 'Records the bridge finished, by type and outcome (accepted: handed to the workflow; recorded-late: its run had closed, recorded through the store; duplicate; ignored: unknown type; dead-lettered). type is "unknown" for an unknown type, "malformed" for an invalid record.',
      labelNames: ['type', 'outcome'],
      registers,
    }),
    retries: new Counter({
      name: 'fulfilment_retries_total',
      help: 'Retries after a transient failure, by operation.',
      labelNames: ['operation'],
      registers,
    }),
    failures: new Counter({
      name: 'fulfilment_failures_total',
      help: 'Failed attempts by operation and error class.',
      labelNames: ['operation', 'error_class'],
      registers,
    }),
    duplicatesSuppressed: new Counter({
      name: 'fulfilment_duplicates_suppressed_total',
      help: 'Redelivered events recognised and suppressed, by the layer that caught them.',
      labelNames: ['layer'],
      registers,
    }),
    unknownTypes: boundedLabelCounter(
      new Counter({
        name: 'fulfilment_unknown_event_types_total',
        help: `Events of a type this consumer ignores, by type name; the first ${MAX_UNKNOWN_TYPE_LABELS} distinct names are labelled, later ones "other". Malformed records are fulfilment_malformed_records_total.`,
        labelNames: ['type'],
        registers,
      }),
      'type',
      MAX_UNKNOWN_TYPE_LABELS,
    ),
    malformedRecords: new Counter({
      name: 'fulfilment_malformed_records_total',
      help: 'Records that are not a valid order event (not JSON, a missing or ill-typed field, oversize, empty), dead-lettered at the edge, by error class.',
      labelNames: ['error_class'],
      registers,
    }),
    ordersHeldFailed: new Counter({
      name: 'fulfilment_orders_held_failed_total',
      help: 'Orders held as failed after shipping gave up (each hold once; `fulfilment order retry` re-drives one).',
      registers,
    }),
    ordersRecallFailed: new Counter({
      name: 'fulfilment_orders_recall_failed_total',
      help: 'Cancelled orders whose shipment the warehouse refused for good to recall, held as recall-failed (each refusal once; `fulfilment order resolve` resolves one).',
      registers,
    }),
    ordersNeedingAttention: new Gauge({
      name: 'fulfilment_orders_needing_attention',
      help: 'Orders of every tenant held for a person now, by status (failed: `fulfilment order retry`; recall-failed: `fulfilment order resolve`), as the store counted them at the last poll.',
      labelNames: ['status'],
      registers,
    }),
    ordersNeedingAttentionOldest: new Gauge({
      name: 'fulfilment_orders_needing_attention_oldest_seconds',
      help: 'Seconds the oldest order held for a person has waited, by status (0 when none), at the last poll.',
      labelNames: ['status'],
      registers,
    }),
    ordersWaiting: new Gauge({
      name: 'fulfilment_orders_waiting',
      help: 'Orders of every tenant whose shipment waits for the warehouse now (down for everyone, or shipping paused), as the store counted them at the last poll.',
      registers,
    }),
    ordersWaitingPaused: new Gauge({
      name: 'fulfilment_orders_waiting_paused',
      help: "Of the waiting orders, those an operator's pause holds (`fulfilment shipping pause`), at the last poll.",
      registers,
    }),
    ordersWaitingRunGone: new Gauge({
      name: 'fulfilment_orders_waiting_run_gone',
      help: 'Of the waiting orders, those whose run the resumer found gone (terminated or deleted by hand): no wake-up reaches them; `fulfilment order retry` starts a run from the store. At the last poll.',
      registers,
    }),
    ordersWaitingOldest: new Gauge({
      name: 'fulfilment_orders_waiting_oldest_seconds',
      help: 'Seconds the oldest waiting order has waited for the warehouse (0 when none), at the last poll.',
      registers,
    }),
    shippingPauses: new Gauge({
      name: 'fulfilment_shipping_pauses',
      help: 'Pauses of shipping in force (`fulfilment shipping pause`: every tenant, or one), as this worker last read them; it reads them every 2 s.',
      registers,
    }),
    workerVersion: new Gauge({
      name: 'fulfilment_worker_version',
      help: "This worker's version in its worker deployment (label build_id): 1 while it takes every new order (current, nothing ramping), 0 while new orders go elsewhere and it finishes the orders pinned to it; read every 2 s.",
      labelNames: ['deployment', 'build_id'],
      registers,
    }),
    wakeUpsFailed: new Counter({
      name: 'fulfilment_wake_ups_failed_total',
      help: "Wake-ups of waiting orders this worker's resumer could not send: reason=signal-failed (Temporal refused or was unreachable; the order was handed back and is woken again), reason=run-gone (the order's run no longer exists; it is set aside, counted by fulfilment_orders_waiting_run_gone, until an operator repairs it).",
      labelNames: ['reason'],
      registers,
    }),
    waitsUnrecorded: new Counter({
      name: 'fulfilment_waits_unrecorded_total',
      help: "Waits of orders the store did not hold: reason=row-lost (a run found its wait gone from the store — a restore, a manual fix — and recorded it again), reason=not-recorded (the store could not record a wait), reason=not-pending (a run waits for an order the store no longer holds pending); either way the order's run checks again by itself within 30 s.",
      labelNames: ['reason'],
      registers,
    }),
    ordersPinnedWithoutWorkers: new Gauge({
      name: 'fulfilment_orders_pinned_without_workers',
      help: 'Open runs (orders) pinned to a version of the worker deployment (label build_id) that has no live workers: Temporal lists no poller of it, so they wait until one of its workers polls again; 0 for a version with pollers. Read every WORKER_VERSION_CHECK_SECONDS.',
      labelNames: ['deployment', 'build_id'],
      registers,
    }),
    shipmentsResumed: new Counter({
      name: 'fulfilment_shipments_resumed_total',
      help: "Waiting orders this worker's shipment resumer woke: reason=probe (one at a time, to try a warehouse not seen answering), reason=resume (it answers again; paced, oldest first).",
      labelNames: ['reason'],
      registers,
    }),
    partitionParkedSeconds: new Gauge({
      name: 'fulfilment_bridge_partition_parked_seconds',
      help: "Seconds each partition this bridge owns has been parked behind a dependency's backoff without a break; 0 while it flows.",
      labelNames: ['group', 'topic', 'partition'],
      registers,
    }),
    parkedBudget: new Gauge({
      name: 'fulfilment_bridge_parked_budget_seconds',
      help: 'BRIDGE_PARKED_BUDGET_SECONDS: how long a partition may stay parked before FulfilmentPartitionParked fires.',
      registers,
    }),
    unknownFields: boundedLabelCounter(
      new Counter({
        name: 'fulfilment_unknown_fields_total',
        help: `Fields of order events their schema version does not define (dropped), by name; the first ${MAX_UNKNOWN_FIELD_LABELS} distinct names are labelled, later ones "other".`,
        labelNames: ['field'],
        registers,
      }),
      'field',
      MAX_UNKNOWN_FIELD_LABELS,
    ),
    oldestUnprocessedAge: new Gauge({
      name: 'fulfilment_oldest_unprocessed_message_age_seconds',
      help: "Age of the oldest message this bridge fetched but has not committed, per consumer group and partition. In-process only: 0 between batches and after a drain, absent while no bridge runs, blind to backlog no bridge fetched; alert on the lag exporter's fulfilment_consumer_lag_oldest_age_seconds.",
      labelNames: ['group', 'topic', 'partition'],
      registers,
    }),
    tenantOldestWaiting: new Gauge({
      name: 'fulfilment_tenant_oldest_waiting_seconds',
      help: 'Per tenant (the busiest by name, the rest "other"), age by Kafka timestamp of the oldest record this bridge has read and not yet handed over; 0 when none.',
      labelNames: ['tenant'],
      registers,
    }),
    tenantDeliveriesInFlight: new Gauge({
      name: 'fulfilment_tenant_deliveries_in_flight',
      help: 'Per tenant (the busiest by name, the rest "other"), hand-overs to Temporal this bridge has in flight now.',
      labelNames: ['tenant'],
      registers,
    }),
    processingDelay: new Histogram({
      name: 'fulfilment_event_processing_delay_seconds',
      help: "Seconds from the event's occurredAt (the producer's clock) to the worker applying it; observed for applied events only, so it says nothing about events still waiting.",
      labelNames: ['type'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600],
      registers,
    }),
    circuitState: new Gauge({
      name: 'fulfilment_circuit_state',
      help: 'Circuit breaker state per dependency: 0 closed, 1 half-open, 2 open.',
      labelNames: ['dependency'],
      registers,
    }),
    circuitOpened: new Counter({
      name: 'fulfilment_circuit_opened_total',
      help: 'Times the circuit breaker of a dependency opened.',
      labelNames: ['dependency'],
      registers,
    }),
    warehouseSlots: new Gauge({
      name: 'fulfilment_warehouse_slots',
      help: `This worker's warehouse call slots (WAREHOUSE_MAX_CONCURRENT_CALLS) by tenant: state=in-use (a call out), state=waiting (a call waiting for a slot). At most ${MAX_TENANT_LABELS} tenants are named (those TENANT_WEIGHTS names first), the rest are tenant="other".`,
      labelNames: ['tenant', 'state'],
      registers,
    }),
    ledgerPruned: new Counter({
      name: 'fulfilment_ledger_pruned_total',
      help: 'Dedupe-ledger (processed_events) rows deleted by retention, across tenants.',
      registers,
    }),
    statusRelayLag: new Gauge({
      name: 'fulfilment_status_relay_lag_seconds',
      help: 'Seconds since the oldest unsent status-outbox row of the topic was committed (0 when none waits): how far the status events lag behind what the store committed.',
      labelNames: ['topic'],
      registers,
    }),
    statusRelayLeading: new Gauge({
      name: 'fulfilment_status_relay_leading',
      help: "1 while this worker's status relay leads the topic (publishes the outbox), 0 while it stands by.",
      labelNames: ['topic'],
      registers,
    }),
    statusEventsPublished: new Counter({
      name: 'fulfilment_status_events_published_total',
      help: 'Status events the relay published, by type (a republished copy counts again).',
      labelNames: ['topic', 'type'],
      registers,
    }),
    statusRelayFailures: new Counter({
      name: 'fulfilment_status_relay_failures_total',
      help: "The status relay's failed rounds by the dependency that failed (kafka, postgres); each is followed by a backoff, the rows wait.",
      labelNames: ['topic', 'dependency'],
      registers,
    }),
    statusOutboxPruned: new Counter({
      name: 'fulfilment_status_outbox_pruned_total',
      help: 'Sent status-outbox rows deleted by retention, across tenants.',
      registers,
    }),
    reconcile: createReconcileMetrics(registers),
  };
}

/** Current total of a metric in `registry` over the samples whose labels match `labels` (0 when never set). */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  return values
    .filter((v) =>
      Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want),
    )
    .reduce((sum, v) => sum + v.value, 0);
}
