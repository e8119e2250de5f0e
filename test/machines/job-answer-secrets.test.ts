// A machine's successful answer reaches the owner secret-scanned, as its error messages do: a token planted
// in a ping result (a value or a key), a scan's root path, a diagnostic's path or message, or a candidate's
// path never reaches the owner's response, the log or the audit trail; what the registry itself scans for
// the import decision (a candidate's name and SKILL.md) keeps its findings, fingerprints and allowlist.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { build } from '../helpers/build.js';
import { holdChannel } from '../helpers/channel.js';
import { listen } from '../helpers/sockets.js';

const TOKEN = `ghp_${'Z9y8X7w6V5'.repeat(3)}uvwxyz`;
const OTHER = `glpat-${'Q1w2E3r4T5'.repeat(2)}`;
const WITHHELD = /withheld/;

async function setUp(t: Test) {
  const h = await build(t);
  const url = await listen(h.app);
  const token = await h.enroll('mac-s');
  const { nextJob } = await holdChannel(t, url, 'mac-s', token);
  /** The owner's request; the machine answers its one job with `{ok: true, result}`; the owner's answer. */
  const exchange = async (ownerPath: string, ownerBody: unknown, result: unknown) => {
    const run = request(`${url}${ownerPath}`, {
      method: 'POST',
      headers: { ...h.owner, 'content-type': 'application/json' },
      body: JSON.stringify(ownerBody),
    });
    const job = await nextJob();
    const answered = await request(`${url}/api/acp/providers/mac-s/jobs/${job.jobId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ok: true, result }),
    });
    t.equal(answered.statusCode, 204, 'the machine is answered as always');
    const owner = await run;
    return { status: owner.statusCode, text: await owner.body.text() };
  };
  /** Everything the owner and the operator can read afterwards besides the answer: the log and the audit trail. */
  const trail = async () =>
    (await readFile(h.logFile, 'utf8')) + (await readFile(path.join(h.dataDir, 'audit.jsonl'), 'utf8').catch(() => ''));
  return { h, exchange, trail };
}

t.test('a ping or sync result: a secret in a value or a key is withheld; the rest of the answer arrives', async (t) => {
  const { exchange, trail } = await setUp(t);
  const answer = await exchange(
    '/api/acp/machines/mac-s/jobs',
    { type: 'ping' },
    {
      pong: true,
      note: `configured with ${TOKEN}`,
      nested: [{ deeper: OTHER }],
      [TOKEN]: 'as a key',
    },
  );
  t.equal(answer.status, 200);
  t.notOk(answer.text.includes(TOKEN), 'the token is not in the answer');
  t.notOk(answer.text.includes(OTHER), 'nor the nested one');
  const body = JSON.parse(answer.text) as { result: Record<string, unknown> };
  t.equal(body.result.pong, true, 'what holds no secret arrives as sent');
  t.match(body.result.note, WITHHELD);
  t.match((body.result.nested as { deeper: string }[])[0]!.deeper, WITHHELD);
  t.notOk(
    Object.keys(body.result).some((k) => k.includes('ghp_')),
    'the key is withheld too',
  );
  t.notOk((await trail()).includes(TOKEN), 'nor in the log or the audit trail');
});

t.test(
  "a scan's root path, a diagnostic's path and message, and a candidate's path are withheld; its SKILL.md findings stay the registry's",
  async (t) => {
    const { exchange, trail } = await setUp(t);
    const candidate = (id: string, fields: Record<string, unknown> = {}) => ({
      id,
      name: `Skill ${id}`,
      sourcePath: `/skills/${id}`,
      sourceContent: `---\nname: ${id}\ndescription: Does ${id}.\n---\nBody.`,
      sourceRevision: 'a'.repeat(64),
      ...fields,
    });
    const answer = await exchange(
      '/api/acp/resources/import/scan?agentletId=mac-s',
      { rootPath: '/skills' },
      {
        rootPath: `/home/me/${TOKEN}/skills`,
        candidates: [
          candidate('clean'),
          candidate('leaky-path', { sourcePath: `/skills/${OTHER}` }),
          candidate('leaky-content', { sourceContent: `---\nname: leaky-content\ndescription: x\n---\nexport TOKEN=${TOKEN}` }),
        ],
        diagnostics: [
          { path: `/skills/${TOKEN}`, code: 'skill_invalid', message: 'no SKILL.md' },
          { path: '/skills/broken', code: 'skill_invalid', message: `could not read ${OTHER}` },
        ],
      },
    );
    t.equal(answer.status, 200, answer.text.slice(0, 300));
    t.notOk(answer.text.includes(TOKEN), 'the token is nowhere in the answer');
    t.notOk(answer.text.includes(OTHER), 'nor the other one');
    const body = JSON.parse(answer.text) as {
      rootPath: string;
      candidates: { id: string }[];
      diagnostics: { path: string; code: string; message: string }[];
    };
    t.match(body.rootPath, WITHHELD);
    t.same(
      body.candidates.map((c) => c.id),
      ['clean'],
      'a candidate with a secret anywhere is not offered',
    );
    t.match(body.diagnostics, [
      { path: WITHHELD, code: 'skill_invalid', message: 'no SKILL.md' },
      { path: '/skills/broken', code: 'skill_invalid', message: WITHHELD },
      { path: WITHHELD, code: 'secret_detected', message: /sourcePath looks like it contains a secret.*fingerprint/ },
      {
        path: '/skills/leaky-content',
        code: 'secret_detected',
        message: /SKILL\.md looks like it contains a secret \(line 5, rule [a-z-]+, fingerprint /,
      },
    ]);
    t.notOk((await trail()).includes(TOKEN), 'nor in the log or the audit trail');
  },
);
