/** Runs the local warehouse service on WAREHOUSE_HOST:WAREHOUSE_PORT; the local stack starts it detached. */
import { loadConfig } from '../../src/base/config.js';
import { startWarehouse } from './server.js';

const config = loadConfig();
const dataFile = process.env.WAREHOUSE_DATA_FILE ?? '.stack/warehouse/shipments.jsonl';
const warehouse = await startWarehouse({ port: config.WAREHOUSE_PORT, host: config.WAREHOUSE_HOST, dataFile });
console.log(`warehouse listening on ${warehouse.url} (data ${dataFile})`);
const stop = () => void warehouse.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
