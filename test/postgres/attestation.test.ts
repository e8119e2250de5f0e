// Launch attestations (test/helpers/attestation-scenarios.ts) on the PostgreSQL store. Runs when DATABASE_URL is set.
import t from 'tap';
import { runAttestationScenarios } from '../helpers/attestation-scenarios.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) runAttestationScenarios(t, 'postgres', async (t) => ({ DATABASE_URL: await freshDatabase(t, base) }));
