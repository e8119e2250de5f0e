// The PostgreSQL store's machines (enrolment, revocation, token rotation) and canvas-token revocations.
// Each rule is one conditional statement: a row changes only when the machine is in the state the rule
// wants, and no row changed is the refusal.
import { AppError } from '../../errors.js';
import type { MachineRecord } from '../../registry/store.js';
import type { PgDatabase } from './database.js';

interface MachineRow {
  machine_id: string;
  token_digest: string;
  enrolled_at: string;
  revoked_at: string | null;
}

function machineOf(row: MachineRow): MachineRecord {
  return {
    machineId: row.machine_id,
    tokenDigest: row.token_digest,
    enrolledAt: row.enrolled_at,
    ...(row.revoked_at === null ? {} : { revokedAt: row.revoked_at }),
  };
}

const notEnrolled = (machineId: string) => new AppError('machine_not_found', `No enrolled machine ${machineId}.`, { machineId });

export class PgMachines {
  constructor(private readonly db: PgDatabase) {}

  list(): Promise<readonly MachineRecord[]> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<MachineRow>('SELECT * FROM machines ORDER BY machine_id COLLATE "C"');
      return rows.map(machineOf);
    });
  }

  get(machineId: string): Promise<MachineRecord | undefined> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<MachineRow>('SELECT * FROM machines WHERE machine_id = $1', [machineId]);
      return rows[0] && machineOf(rows[0]);
    });
  }

  findByTokenDigest(digest: string): Promise<MachineRecord | undefined> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<MachineRow>('SELECT * FROM machines WHERE token_digest = $1 AND revoked_at IS NULL', [digest]);
      return rows[0] && machineOf(rows[0]);
    });
  }

  enroll(record: MachineRecord): Promise<void> {
    return this.db.guard(async () => {
      // New, or re-enrolment of a revoked machine; an active one returns no row.
      const { rowCount } = await this.db.query(
        `INSERT INTO machines (machine_id, token_digest, enrolled_at, revoked_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (machine_id) DO UPDATE SET token_digest = EXCLUDED.token_digest, enrolled_at = EXCLUDED.enrolled_at,
           revoked_at = EXCLUDED.revoked_at
         WHERE machines.revoked_at IS NOT NULL`,
        [record.machineId, record.tokenDigest, record.enrolledAt, record.revokedAt ?? null],
      );
      if (!rowCount) {
        throw new AppError('machine_exists', `Machine ${record.machineId} is already enrolled; revoke it first to issue a new token.`, {
          machineId: record.machineId,
        });
      }
    });
  }

  revoke(machineId: string, revokedAt: string): Promise<void> {
    return this.#updateEnrolled('revoked_at', machineId, revokedAt);
  }

  rotateToken(machineId: string, tokenDigest: string): Promise<void> {
    return this.#updateEnrolled('token_digest', machineId, tokenDigest);
  }

  /** Sets one column of an enrolled (not revoked) machine; 404 when there is none. */
  #updateEnrolled(column: 'revoked_at' | 'token_digest', machineId: string, value: string): Promise<void> {
    return this.db.guard(async () => {
      const { rowCount } = await this.db.query(`UPDATE machines SET ${column} = $2 WHERE machine_id = $1 AND revoked_at IS NULL`, [
        machineId,
        value,
      ]);
      if (!rowCount) throw notEnrolled(machineId);
    });
  }

  revokeCanvasTokens(canvasId: string, revokedBefore: string): Promise<void> {
    return this.db.guard(async () => {
      // ISO times in one format compare as text; the cut-off only moves forward.
      await this.db.query(
        `INSERT INTO canvas_token_revocations (canvas_id, revoked_before) VALUES ($1, $2)
         ON CONFLICT (canvas_id) DO UPDATE SET revoked_before = EXCLUDED.revoked_before
         WHERE canvas_token_revocations.revoked_before < EXCLUDED.revoked_before`,
        [canvasId, revokedBefore],
      );
    });
  }

  canvasTokensRevokedBefore(canvasId: string): Promise<string | undefined> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<{ revoked_before: string }>(
        'SELECT revoked_before FROM canvas_token_revocations WHERE canvas_id = $1',
        [canvasId],
      );
      return rows[0]?.revoked_before;
    });
  }
}
