/** Workflow entry point handed to the worker's bundler. */
export { orderFulfilment } from './order-fulfilment.js';
export { pruneLedger } from './ledger-retention.js';
