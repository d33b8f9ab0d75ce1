/** Workflow entry point handed to the worker's bundler: every workflow type the worker runs. */
export { orderFulfilmentV2 } from './order-fulfilment.js';
export { pruneLedger } from './ledger-retention-run.js';
export { pruneStatusOutbox } from './status-outbox-retention-run.js';
