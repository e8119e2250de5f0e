// Shared by the backup tests: the compiled backup command as a child process, HTTP calls, file checks.
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Test } from 'tap';
import { request } from 'undici';
import { recordIssuedToken } from './build.js';
import { coverageEnv } from '../crash/server-process.js';

export const BACKUP_ENTRY = path.resolve('dist/scripts/backup.js');
/** A start takes ~2 s of CPU; on a machine shared with a CI run it can take many times that. */
export const START_MS = 90_000;

export interface Outcome {
  code: number | string | null;
  stdout: string;
  stderr: string;
}

/** Runs the compiled backup command; `onLine` sees each stderr line (the trace) as it comes. */
export function backup(
  args: string[],
  env: Record<string, string>,
  onLine?: (line: string, kill: () => void) => void,
  killAfterMs?: number,
): Promise<Outcome> {
  const child = spawn(process.execPath, [BACKUP_ENTRY, ...args], {
    env: { PATH: process.env.PATH ?? '', ...coverageEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => {
    const before = stderr.length;
    stderr += c.toString();
    if (onLine)
      for (const line of stderr
        .slice(stderr.lastIndexOf('\n', before) + 1)
        .split('\n')
        .slice(0, -1))
        onLine(line, () => child.kill('SIGKILL'));
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs ?? 60_000);
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code: signal ?? code, stdout, stderr });
    }),
  );
}

export async function call(origin: string, method: 'GET' | 'PUT' | 'POST', url: string, token: string, body?: unknown) {
  const res = await request(`${origin}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    headersTimeout: 15_000,
    bodyTimeout: 15_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** Every file under dir, relative. */
export async function filesUnder(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const r = path.join(rel, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(dir, r)));
    else out.push(r);
  }
  return out.sort();
}

/** Every data file parses: documents as JSON, journals and the audit log line by line. */
export async function assertParses(t: Test, dir: string): Promise<void> {
  for (const rel of await filesUnder(dir)) {
    const text = await readFile(path.join(dir, rel), 'utf8');
    if (rel.endsWith('.json')) t.doesNotThrow(() => JSON.parse(text), `${rel} parses`);
    else if (rel.endsWith('.jsonl') || rel.endsWith('.journal')) {
      t.ok(text === '' || text.endsWith('\n'), `${rel} ends with a whole line`);
      t.doesNotThrow(
        () =>
          text
            .split('\n')
            .filter(Boolean)
            .forEach((l) => JSON.parse(l)),
        `${rel}: every line parses`,
      );
    }
  }
}

/** Env for a server that generates its credentials into DATA_DIR/credentials.json. */
export const generatingEnv = (dataDir: string, extra: Record<string, string> = {}) => ({
  DATA_DIR: dataDir,
  LOG_LEVEL: 'info',
  PUBLIC_BASE_URL: 'http://registry.test',
  MAX_EVENT_LOOP_DELAY_MS: '0',
  RATE_LIMIT_WRITES_PER_MINUTE: '0',
  ...extra,
});

export async function credentialsOf(
  dataDir: string,
): Promise<{ ownerToken: string; huabuProviderToken: string; canvasTokenSecret: string }> {
  const creds = JSON.parse(await readFile(path.join(dataDir, 'credentials.json'), 'utf8'));
  for (const v of Object.values(creds)) if (typeof v === 'string' && v.startsWith('arr_')) recordIssuedToken(v);
  return creds;
}
