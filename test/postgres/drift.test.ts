// Drift of pinned launches (test/helpers/drift-scenarios.ts) on the PostgreSQL store. Runs when DATABASE_URL is set.
import t from 'tap';
import { runDriftScenarios } from '../helpers/drift-scenarios.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) runDriftScenarios(t, 'postgres', async (t) => ({ DATABASE_URL: await freshDatabase(t, base) }));
