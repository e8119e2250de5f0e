// Moving a thread's pin (test/helpers/pin-move-scenarios.ts) on the PostgreSQL store. Runs when DATABASE_URL is set.
import t from 'tap';
import { runPinMoveScenarios } from '../helpers/pin-move-scenarios.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';
import type { AuditEntry } from '../../src/registry/store.js';

const base = postgresOrSkip(t);
if (base) {
  runPinMoveScenarios(t, 'postgres', {
    env: async (t) => ({ DATABASE_URL: await freshDatabase(t, base) }),
    audit: async (_h, env) =>
      (
        await queryOnce<{
          at: string;
          actor: string;
          action: string;
          object_id: string;
          outcome: string;
          details: AuditEntry['details'] | null;
        }>(env.DATABASE_URL!, 'SELECT at, actor, action, object_id, outcome, details FROM audit_log ORDER BY seq')
      ).map((r) => ({
        at: r.at,
        actor: r.actor,
        action: r.action,
        id: r.object_id,
        outcome: r.outcome,
        ...(r.details ? { details: r.details } : {}),
      })),
  });
}
