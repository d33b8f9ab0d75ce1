/**
 * Provisioning's PostgreSQL step: the migrations applied as the owner (DATABASE_MIGRATION_URL), then the runtime
 * role (the user of DATABASE_URL) granted exactly what the service needs (src/adapters/store/grants.ts). Idempotent.
 */
import { ConfigError, databaseUser } from '../../base/config.js';
import { migrationConnection, type DatabaseSettings } from '../../adapters/store/connection.js';
import { migrate, type MigrationResult } from '../../adapters/store/migrate.js';

export interface PostgresResult extends MigrationResult {
  /** The role the grants went to. */
  runtimeRole: string;
}

export async function provisionPostgres(config: DatabaseSettings): Promise<PostgresResult> {
  const connection = migrationConnection(config);
  const runtimeRole = databaseUser(config.DATABASE_URL);
  if (runtimeRole === '') {
    throw new ConfigError(
      'DATABASE_URL names no user: provisioning grants the runtime role it connects as, so expected postgres://<runtime role>:<password>@<host>/<database>',
    );
  }
  return { runtimeRole, ...(await migrate(connection, runtimeRole)) };
}
