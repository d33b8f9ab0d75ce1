/**
 * The commands' Temporal client: src/domain/temporal.ts's connectClient (the one way every connection gets its TLS, API
 * key and metadata), with a failure that names where it tried. A refused certificate or key says which variables
 * to check already (PermanentStartupError) and passes through as it is. Bounded (cliTemporalClientWithin): the
 * connection waited for at most --timeout, and one that arrives after that closed when it does.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../base/config.js';
import { PermanentStartupError } from '../base/startup.js';
import { connectClient } from '../domain/temporal.js';
import { withTimeout } from '../base/timeout.js';

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

/** cliTemporalClient, or a failure naming --timeout once `ms` passed; a connection that arrives later is closed. */
export async function cliTemporalClientWithin(config: Config, ms: number): Promise<Client> {
  const connecting = cliTemporalClient(config);
  try {
    return await withTimeout(connecting, ms, `no answer within ${ms / 1000} s (--timeout)`);
  } catch (err) {
    void connecting.then(
      (late) => late.connection.close(),
      () => undefined,
    );
    throw err;
  }
}
