// Pinned launches and thread reads (test/helpers/pin-scenarios.ts) on the PostgreSQL store. Runs when DATABASE_URL is set.
import t from 'tap';
import { runPinScenarios } from '../helpers/pin-scenarios.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) runPinScenarios(t, 'postgres', async (t) => ({ DATABASE_URL: await freshDatabase(t, base) }));
