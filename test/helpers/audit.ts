// The audit log as a test reads it: DATA_DIR's audit.jsonl, one JSON entry a line, oldest first.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { AuditEntry } from '../../src/registry/store.js';

export type AuditLine = AuditEntry;

/**
 * The entries of the audit log in `dataDir` (or a test app's), oldest first; none before the file exists. Only
 * whole lines count: a line still being appended (an entry written after its answer) is left for the next read.
 * An entry written after the answer the test has is waited for with `until` (test/helpers/wait.ts).
 */
export async function auditLines(at: string | { dataDir: string }): Promise<AuditLine[]> {
  const dataDir = typeof at === 'string' ? at : at.dataDir;
  const text = await readFile(path.join(dataDir, 'audit.jsonl'), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  return text
    .split('\n')
    .slice(0, -1)
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditLine);
}
