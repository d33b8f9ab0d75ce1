import { describe, expect, it } from 'vitest';
import { PermanentStartupError } from '../../../../src/base/startup.js';
import { permanentDatabaseFailure } from '../../../../src/adapters/store/runtime-role.js';

const config = { DATABASE_URL: 'postgres://fulfilment:pw@db.example/orders', DATABASE_SSL_CA_FILE: '/etc/pg/ca.pem' };
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('start-up failures of PostgreSQL that waiting cannot cure', () => {
  it('a refused login names the role, and no retry', () => {
    const err = permanentDatabaseFailure(
      pgError('28P01', 'password authentication failed for user "fulfilment"'),
      config,
    );
    expect(err).toBeInstanceOf(PermanentStartupError);
    expect(err?.message).toBe(
      'PostgreSQL refused the login of DATABASE_URL (role "fulfilment"): password authentication failed for user "fulfilment". Check the role and its password.',
    );
    expect(permanentDatabaseFailure(pgError('28000', 'no pg_hba.conf entry'), config)).toBeInstanceOf(
      PermanentStartupError,
    );
  });

  it('an untrusted server certificate names the CA it was checked against', () => {
    const err = permanentDatabaseFailure(
      pgError('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"),
      config,
    );
    expect(err?.message).toContain(
      "PostgreSQL's server certificate is not trusted: Hostname/IP does not match certificate's altnames (ERR_TLS_CERT_ALTNAME_INVALID), verified against the CA in DATABASE_SSL_CA_FILE=/etc/pg/ca.pem",
    );
    expect(
      permanentDatabaseFailure(pgError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'), {
        DATABASE_URL: config.DATABASE_URL,
      })?.message,
    ).toContain('verified against the system CAs (DATABASE_SSL_CA_FILE is unset)');
  });

  it('PostgreSQL down or restarting is waited for', () => {
    expect(
      permanentDatabaseFailure(pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:55432'), config),
    ).toBeUndefined();
    expect(permanentDatabaseFailure(pgError('57P03', 'the database system is starting up'), config)).toBeUndefined();
    expect(permanentDatabaseFailure(new Error('Connection terminated unexpectedly'), config)).toBeUndefined();
  });
});
