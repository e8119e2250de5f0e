// The PostgreSQL store's workloads: the first realization of a thread wins by its primary key, across
// replicas, with its revision holds and audit row inserted by the same statement; a pin move is one transaction holding the
// workload's row lock.
import { AppError } from '../../errors.js';
import type { AuditIntent } from '../../registry/store.js';
import type { WorkloadRecord } from '../../schemas/workload.js';
import { realizedEntry, repinnedEntry } from '../../audit/audit-trail.js';
import { checkPinMove, type PinMove } from '../../workloads/pin-move.js';
import { workloadHolder } from '../../registry/record-digest.js';
import { insertAudit } from './audit.js';
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

  /**
   * A pin move in one transaction: the workload's row is locked (concurrent moves of one thread, on any
   * replica, run one after the other: the second sees the first's pin and is 409 `pin_conflict`), the
   * record's digest is read under a share lock (a write of the record waits for the commit), then the
   * record, the moved hold, the audit row and the event are written together.
   */
  movePin(move: PinMove, next: (current: WorkloadRecord) => WorkloadRecord, audit: AuditIntent): Promise<WorkloadRecord> {
    return this.db.guard(async () => {
      const entry = repinnedEntry(move, audit);
      const moved = await this.db.transaction(async (client) => {
        const { rows } = await client.query<{ record: WorkloadRecord }>(
          'SELECT record FROM workloads WHERE canvas_id = $1 AND thread_id = $2 FOR UPDATE',
          [move.canvasId, move.threadId],
        );
        const current = rows[0]?.record;
        if (!current) {
          throw new AppError('workload_not_found', `No workload for thread ${move.threadId} of canvas ${move.canvasId}.`, {
            canvasId: move.canvasId,
            threadId: move.threadId,
          });
        }
        const held = await client.query<{ digest: string }>('SELECT digest FROM resources WHERE id = $1 FOR SHARE', [move.id]);
        checkPinMove(current, move, held.rows[0]?.digest);
        const record = next(current);
        await client.query('UPDATE workloads SET record = $3::json WHERE canvas_id = $1 AND thread_id = $2', [
          move.canvasId,
          move.threadId,
          JSON.stringify(record),
        ]);
        await client.query(
          `INSERT INTO revision_holds (resource_id, holder, digest) VALUES ($1, $2, $3)
           ON CONFLICT (resource_id, holder) DO UPDATE SET digest = EXCLUDED.digest`,
          [move.id, workloadHolder(move.canvasId, move.threadId), move.to],
        );
        await insertAudit(client, [entry]);
        await client.query(`SELECT arr_event('workload.repinned', 'workload', $1, NULL)`, [`${move.canvasId}/${move.threadId}`]);
        return record;
      });
      this.audit.written(1);
      return moved;
    });
  }
}
