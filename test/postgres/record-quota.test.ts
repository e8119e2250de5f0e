// A machine's record quota on the PostgreSQL store: the bytes the database counts are the bytes the rule
// defines (multi-byte text at the limit exactly), and concurrent receipts at the limit pass one at a time.
// Runs when DATABASE_URL is set.
import t from 'tap';
import { recordBytes } from '../../src/registry/record-quota.js';
import { build } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('record quota on PostgreSQL: bytes of multi-byte text, count, and concurrent receipts at the limit', async (t) => {
    const url = await freshDatabase(t, base);
    const text = 'Grüße, 工具 und 🚀. '.repeat(20);
    const bytes = (id: string) =>
      recordBytes({ schemaVersion: 2, id, name: `Tool ${id}`, provider: 'agentlet-a', sourceContent: text.trim(), userContent: '' });
    const h = await build(t, {
      env: {
        DATABASE_URL: url,
        REQUIRED_RESOURCE_IDS: '',
        RATE_LIMIT_WRITES_PER_MINUTE: '0',
        RECORDS_PER_MACHINE: '4',
        RECORD_BYTES_PER_MACHINE: String(bytes('m-1') + bytes('m-2')),
      },
    });
    await h.enroll('agentlet-a');
    const headers = h.bearer(await h.canvasToken('canvas-x', 'agentlet-a'));
    const post = (id: string, sourceContent = text) =>
      h.app.inject({
        method: 'POST',
        url: '/api/rfs/canvas-x/resources/local/receipts',
        headers,
        payload: { id, kind: 'tool', name: `Tool ${id}`, sourceContent, entrypoint: `tools/${id}/run.sh` },
      });
    t.equal((await post('m-1')).statusCode, 200);
    t.equal((await post('m-2')).statusCode, 200, 'exactly at the byte limit, counted in UTF-8 by the database');
    const over = await post('m-3', 'x');
    t.equal(over.statusCode, 409);
    t.match(over.json(), { code: 'record_quota_exceeded', details: { limit: 'bytes' } });
    t.equal((await post('m-2', 'short')).statusCode, 200, 'a smaller replacement');
    const answers = await Promise.all(['c-1', 'c-2', 'c-3', 'c-4', 'c-5'].map((id) => post(id, 'tiny')));
    t.same(
      answers.map((a) => a.statusCode).sort(),
      [200, 200, 409, 409, 409],
      'two records fit (the count bound is 4): exactly two of five concurrent receipts pass',
    );
  });
}
