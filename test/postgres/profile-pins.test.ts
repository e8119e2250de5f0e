// A profile's approved content (test/helpers/profile-pin-scenarios.ts) on the PostgreSQL store. Runs when DATABASE_URL is set.
import t from 'tap';
import { runProfilePinScenarios } from '../helpers/profile-pin-scenarios.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) runProfilePinScenarios(t, 'postgres', async (t) => ({ DATABASE_URL: await freshDatabase(t, base) }));
