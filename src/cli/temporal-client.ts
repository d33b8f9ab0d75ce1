/**
 * The commands' Temporal client: src/temporal.ts's connectClient (the one way every connection gets its TLS, API
 * key and metadata), with a failure that names where it tried. A refused certificate or key says which variables
 * to check already (PermanentStartupError) and passes through as it is.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../config.js';
import { PermanentStartupError } from '../startup.js';
import { connectClient } from '../temporal.js';

export async function cliTemporalClient(config: Config): Promise<Client> {
  try {
    return await connectClient(config);
  } catch (err) {
    if (err instanceof PermanentStartupError) throw err;
    const from = config.temporal.addressFrom === 'TEMPORAL_ADDRESS' ? '' : `, here from ${config.temporal.addressFrom}`;
    throw new Error(`Temporal at ${config.TEMPORAL_ADDRESS} (TEMPORAL_ADDRESS${from}): ${(err as Error).message}`, {
      cause: err,
    });
  }
}
