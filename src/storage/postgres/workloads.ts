// The PostgreSQL store's workloads: the first realization of a thread wins by its primary key, across
// replicas, with its revision holds and audit row inserted by the same statement.
import { AppError } from '../../errors.js';
import type { AuditIntent } from '../../registry/store.js';
import type { WorkloadRecord } from '../../schemas/workload.js';
import { realizedEntry } from '../../audit/audit-trail.js';
import { workloadHolder } from '../../registry/record-digest.js';
import type { AuditRetention } from './audit.js';
import { MAX_ATTEMPTS, type PgDatabase } from './database.js';

export class PgWorkloads {
  constructor(
    private readonly db: PgDatabase,
    private readonly audit: AuditRetention,
  ) {}

  list(canvasId: string): Promise<readonly WorkloadRecord[]> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<{ record: WorkloadRecord }>(
        'SELECT record FROM workloads WHERE canvas_id = $1 ORDER BY thread_id COLLATE "C"',
        [canvasId],
      );
      return rows.map((r) => r.record);
    });
  }

  get(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined> {
    return this.db.guard(() => this.#read(canvasId, threadId));
  }

  async #read(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined> {
    const { rows } = await this.db.query<{ record: WorkloadRecord }>(
      'SELECT record FROM workloads WHERE canvas_id = $1 AND thread_id = $2',
      [canvasId, threadId],
    );
    return rows[0]?.record;
  }

  realize(record: WorkloadRecord, audit?: AuditIntent): Promise<{ workload: WorkloadRecord; created: boolean }> {
    return this.db.guard(async () => {
      const entry = audit && realizedEntry(record, audit);
      const pins = record.spec.resourcePins ?? [];
      const holder = workloadHolder(record.canvasId, record.threadId);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        // The primary key picks exactly one winner across replicas; the others read the winner's record.
        // The winner's revision holds (its pins) and audit row are inserted by the same statement (one
        // commit), only when its row was.
        const inserted = await this.db.query(
          `WITH won AS (
             INSERT INTO workloads (canvas_id, thread_id, record) VALUES ($1, $2, $3::json) ON CONFLICT DO NOTHING RETURNING 1
           ), held AS (
             INSERT INTO revision_holds (resource_id, holder, digest)
               SELECT r, $4, d FROM won, unnest($5::text[], $6::text[]) AS h(r, d)
               ON CONFLICT (resource_id, holder) DO UPDATE SET digest = EXCLUDED.digest
           )
           ${entry ? 'INSERT INTO audit_log (at, actor, action, object_id, outcome) SELECT $7, $8, $9, $10, $11 FROM won' : 'SELECT 1 FROM won'}`,
          [
            record.canvasId,
            record.threadId,
            JSON.stringify(record),
            holder,
            pins.map((p) => p.id),
            pins.map((p) => p.digest),
            ...(entry ? [entry.at, entry.actor, entry.action, entry.id, entry.outcome] : []),
          ],
        );
        if (inserted.rowCount) {
          if (entry) this.audit.written(1);
          return { workload: record, created: true };
        }
        const existing = await this.#read(record.canvasId, record.threadId);
        if (existing) return { workload: existing, created: false };
      }
      throw new AppError('storage_unavailable', 'The workload could not be stored; retry later.');
    });
  }
}
