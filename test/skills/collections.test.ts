// Real public skill collections (test/fixtures/skill-collections, provenance in its README) imported whole, as a
// new user would: the compiled server as a process, `agentlet-resources` packed and installed from its tarball
// (`init`, then `serve` as a process), and the owner routes over HTTP. For every skill of the corpus: the scan
// lists it, the import succeeds and the record is in the catalogue; the installed folder holds the same files
// with the same bytes and the same run bits, and its scripts run; the v1 views (owner and agent) read the front
// matter's description and the body without front matter, cut at a block boundary with the pointer to v2 and
// naming the folder; the v2 views hold the whole SKILL.md. Skill archives beside the folders are listed, never
// skipped. A skill folder deleted by hand blocks no other publish and is shown for its machine; the owner can
// delete it and import it again; the source revision covers file modes, and a refresh carries a mode change.
import t from 'tap';
import { call as httpCall } from '../helpers/http-call.js';
import { execFile, spawn } from 'node:child_process';
import { appendFileSync, existsSync } from 'node:fs';
import { access, chmod, constants, cp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { tempDir, tokenFile } from '../helpers/agentlet.js';
import { needsBuild } from '../helpers/built.js';
import { CANARY, canaryLogFile, recordIssuedToken, tempDataDir } from '../helpers/build.js';
import { installedAgentlet } from '../helpers/packed.js';
import { startServer } from '../crash/server-process.js';
import { until } from '../helpers/wait.js';

t.setTimeout(300_000);

const CORPUS = path.resolve('test', 'fixtures', 'skill-collections');
const MACHINE = 'agentlet-corpus';
const CANVAS = 'canvas-corpus';
/** v1's bounds (docs/records.md): a description of 512 characters, instructions of 4000. */
const V1_DESCRIPTION = 512;
const V1_INSTRUCTIONS = 4000;

/** The members of the answers this file reads (each answer has some of them). */
interface Body {
  token: string;
  code: string;
  message: string;
  machines: { machineId: string; status: string }[];
  candidates: Candidate[];
  diagnostics: { path: string; code: string; message: string }[];
  resource: Record<string, unknown>;
  resources: { id: string; provider: string; [key: string]: unknown }[];
  manageableResourceIds: string[];
  removed: boolean;
  schemaVersion: number;
  name: string;
  description: string;
  instructions: string;
  sourceContent: string;
}

interface Candidate {
  id: string;
  name: string;
  sourcePath: string;
  sourceContent: string;
  sourceRevision: string;
  /** What the scan says of the skill without refusing it (the front matter beside the Agent Skills format). */
  warnings?: { code: string; message: string }[];
}

/** A call over the socket; an empty answer reads as `{}`. */
async function call(origin: string, method: string, url: string, body?: unknown, token?: string) {
  const answer = await httpCall<Body | undefined>(origin, method, url, body, token);
  return { ...answer, body: answer.body ?? ({} as Body) };
}

/** One skill of the corpus, read from the fixture as the format defines it. */
interface Skill {
  collection: string;
  folder: string;
  id: string;
  /** The folder in the test's copy of the corpus (what the owner scans and imports). */
  source: string;
  /** The folder in test/fixtures (what the installed copy is compared with). */
  fixture: string;
  skillMd: string;
  frontMatter: { name: string; description: string; [key: string]: unknown };
  /** YAML between the fences, as written. */
  frontMatterText: string;
  /** SKILL.md after the front matter, trimmed. */
  body: string;
}

const FRONT_MATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

function readSkillFixture(collection: string, folder: string, sources: string, skillMd: string): Skill {
  const match = FRONT_MATTER.exec(skillMd);
  if (!match) throw new Error(`${collection}/${folder}/SKILL.md has no front matter: the corpus is broken`);
  return {
    collection,
    folder,
    id: folder,
    source: path.join(sources, collection, folder),
    fixture: path.join(CORPUS, collection, folder),
    skillMd,
    frontMatter: parseYaml(match[1]!) as Skill['frontMatter'],
    frontMatterText: match[1]!,
    body: skillMd.slice(match[0].length).trim(),
  };
}

interface FileInfo {
  bytes: Buffer;
  /** The run bits (mode & 0o111). */
  run: number;
  mode: number;
}

/** Every file under `dir` by its `/`-separated relative path. */
async function filesOf(dir: string): Promise<Map<string, FileInfo>> {
  const out = new Map<string, FileInfo>();
  const walk = async (at: string, rel: string) => {
    for (const entry of (await readdir(at, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = path.join(at, entry.name);
      const r = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) await walk(full, r);
      else {
        const st = await stat(full);
        out.set(r, { bytes: await readFile(full), run: st.mode & 0o111, mode: st.mode & 0o7777 });
      }
    }
  };
  await walk(dir, '');
  return out;
}

/**
 * Whether `text` ends inside a fenced code block: a line of three or more backticks or tildes (any
 * indentation) opens one, and a line of at least as many of the same character, with nothing after it, closes it.
 */
function endsInsideFence(text: string): boolean {
  let open: { char: string; length: number } | undefined;
  for (const line of text.split('\n')) {
    const match = /^[ \t]*(`{3,}|~{3,})(.*)$/.exec(line);
    if (!match) continue;
    const fence = match[1]!;
    if (!open) {
      if (fence[0] === '`' && match[2]!.includes('`')) continue; // inline code, not a fence
      open = { char: fence[0]!, length: fence.length };
    } else if (fence[0] === open.char && fence.length >= open.length && match[2]!.trim() === '') {
      open = undefined;
    }
  }
  return open !== undefined;
}

const folded = (s: string) => s.replace(/\s+/g, ' ').trim();

/** What is wrong with a v1 view of `skill` (an empty list when nothing is). */
function v1Problems(skill: Skill, view: Body): string[] {
  const problems: string[] = [];
  const want = folded(skill.frontMatter.description);
  const got = folded(view.description ?? '');
  if (want.length <= V1_DESCRIPTION) {
    if (got !== want) problems.push(`description is ${JSON.stringify(got.slice(0, 80))}, not the front matter's`);
  } else {
    const head = got.replace(/\s*(…|\.\.\.)$/, '');
    if (got.length > V1_DESCRIPTION || head.length < V1_DESCRIPTION / 2 || !want.startsWith(head) || !/\s/.test(want[head.length] ?? ' ')) {
      problems.push(`description ${JSON.stringify(got.slice(0, 80))}… is not the front matter's cut at a word to ${V1_DESCRIPTION}`);
    }
  }
  const instructions = view.instructions ?? '';
  if (instructions.length > V1_INSTRUCTIONS) problems.push(`instructions are ${instructions.length} characters`);
  if (/^\s*---/.test(instructions) || instructions.includes(skill.frontMatterText)) problems.push('instructions hold the front matter');
  if (!instructions.includes(`$AGENT_RESOURCE_DIR/skills/${skill.id}/`))
    problems.push(`instructions do not name the folder $AGENT_RESOURCE_DIR/skills/${skill.id}/`);
  // The body as the view shows it: from its start, as long as the view follows it.
  const start = instructions.indexOf(skill.body.slice(0, 120));
  if (start < 0) {
    problems.push('instructions do not hold the start of the body');
    return problems;
  }
  let shown = 0;
  const rest = instructions.slice(start);
  while (shown < rest.length && shown < skill.body.length && rest[shown] === skill.body[shown]) shown++;
  if (shown < skill.body.length) {
    if (endsInsideFence(skill.body.slice(0, shown)))
      problems.push(`instructions are cut inside a code fence (after ${shown} characters of the body)`);
    if (!instructions.includes('schemaVersion=2')) problems.push('instructions are cut without the pointer to v2 (schemaVersion=2)');
    if (skill.body.length <= V1_INSTRUCTIONS / 2) problems.push(`a body of ${skill.body.length} characters is cut`);
  }
  return problems;
}

/** What differs between the fixture's files and the installed copy's (an empty list when nothing does). */
async function fileProblems(skill: Skill, installed: string): Promise<string[]> {
  if (!existsSync(installed)) return [`${installed} does not exist`];
  const want = await filesOf(skill.fixture);
  const got = await filesOf(installed);
  const problems: string[] = [];
  for (const [rel, file] of want) {
    const copy = got.get(rel);
    if (!copy) problems.push(`${rel} missing`);
    else {
      if (!copy.bytes.equals(file.bytes)) problems.push(`${rel} has other bytes`);
      if (copy.run !== file.run) problems.push(`${rel} run bits ${copy.run.toString(8)}, fixture ${file.run.toString(8)}`);
      if (copy.mode & 0o6002) problems.push(`${rel} mode ${copy.mode.toString(8)} is setuid, setgid or world-writable`);
    }
  }
  for (const rel of got.keys()) if (!want.has(rel)) problems.push(`${rel} is not in the fixture`);
  return problems;
}

/** Runs `file` itself (not through a shell): its run bit is what lets it start. */
function runFile(
  file: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd, timeout: 30_000, env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), ...env } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as NodeJS.ErrnoException).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

t.test('real public skill collections import whole through the packed Agentlet and the owner routes', { skip: needsBuild() }, async (t) => {
  const dir = await tempDir(t, 'skill-collections-');
  const started = Date.now();
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  // The slow parts side by side: packing and installing the Agentlet, starting the registry.
  const packed = installedAgentlet(t);
  packed.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
  const dataDir = await tempDataDir();
  const serverStarted = startServer({
    DATA_DIR: dataDir,
    OWNER_TOKEN: CANARY.owner,
    HUABU_PROVIDER_TOKEN: CANARY.huabu,
    CANVAS_TOKEN_SECRET: CANARY.secret,
    SEED_HUABU_RESOURCES: 'false',
    MAX_EVENT_LOOP_DELAY_MS: '0',
  });
  serverStarted.catch(() => undefined);
  t.teardown(async () => (await serverStarted.catch(() => undefined))?.kill());

  // The corpus: each collection's skill folders (a folder holding SKILL.md) and archives, copied where the
  // owner's sources live (the test changes a mode there); the copy keeps the fixture's run bits.
  const sources = path.join(dir, 'sources');
  await cp(CORPUS, sources, { recursive: true });
  const collections = (await readdir(CORPUS, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  const skills: Skill[] = [];
  const archives: string[] = [];
  for (const collection of collections) {
    for (const entry of await readdir(path.join(CORPUS, collection), { withFileTypes: true })) {
      const at = path.join(CORPUS, collection, entry.name);
      if (entry.isDirectory() && existsSync(path.join(at, 'SKILL.md'))) {
        skills.push(readSkillFixture(collection, entry.name, sources, await readFile(path.join(at, 'SKILL.md'), 'utf8')));
      } else if (entry.isFile() && /\.(zip|skill)$/.test(entry.name)) {
        archives.push(path.join(sources, collection, entry.name));
      }
    }
  }
  skills.sort((a, b) => (a.id < b.id ? -1 : 1));
  t.ok(collections.length >= 2 && skills.length >= 30, `${skills.length} skills in ${collections.length} collections`);
  t.same(
    skills.filter((s) => skills.filter((o) => o.id === s.id).length > 1).map((s) => s.id),
    [],
    'each skill ID is in one collection only',
  );
  const executables: string[] = [];
  for (const skill of skills) {
    for (const [rel, file] of await filesOf(skill.fixture)) {
      if (file.run !== 0) executables.push(`${skill.id}/${rel}`);
      const copied = await stat(path.join(skill.source, ...rel.split('/')));
      if ((copied.mode & 0o111) !== file.run) throw new Error(`the copy of ${skill.id}/${rel} lost its run bits`);
    }
  }
  t.ok(
    executables.includes('subagent-driven-development/scripts/task-brief') && executables.length >= 20,
    `the fixture keeps its run bits (${executables.length} executable files; git stores them as mode 100755)`,
  );

  // The registry, a machine enrolled, and the packed Agentlet: init, then serve.
  const server = await serverStarted;
  const api = (method: string, url: string, body?: unknown) => call(server.origin, method, url, body);
  const enrolled = await api('POST', '/api/acp/machines', { machineId: MACHINE });
  t.equal(enrolled.status, 201, enrolled.text);
  recordIssuedToken(enrolled.body.token);
  const tokenPath = await tokenFile(dir, enrolled.body.token);

  const bin = await packed;
  const root = path.join(dir, 'resources');
  const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), AGENT_RESOURCE_DIR: root };
  const init = await runFile(bin, ['init'], dir, env);
  t.equal(init.code, 0, `init: ${init.stderr}`);
  const daemon = spawn(
    bin,
    ['serve', '--registry', server.origin, '--machine-id', MACHINE, '--token-file', tokenPath, '--reconnect-max-ms', '500'],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  daemon.stdout.on('data', (c: Buffer) => (log += c.toString()));
  daemon.stderr.on('data', (c: Buffer) => (log += c.toString()));
  const exited = new Promise<number | null>((resolve) => daemon.once('exit', resolve));
  t.teardown(async () => {
    if (daemon.exitCode === null) daemon.kill('SIGKILL');
    await exited;
    appendFileSync(canaryLogFile(), `$ agentlet-resources serve (installed from npm pack)\n${log}\n`);
  });
  await until('the machine connected', async () =>
    (await api('GET', '/api/acp/machines')).body.machines.some((m) => m.machineId === MACHINE && m.status === 'connected'),
  );
  t.comment(`${seconds()} s: the registry started, the Agentlet packed, installed and connected`);

  // Scan each collection: every skill folder a candidate, every archive a candidate or a diagnostic.
  const candidates = new Map<string, Candidate>();
  for (const collection of collections) {
    const rootPath = path.join(sources, collection);
    const scan = await api('POST', `/api/acp/resources/import/scan?agentletId=${MACHINE}`, { rootPath });
    t.equal(scan.status, 200, `scan ${collection}: ${scan.status}`);
    const diagnostics = scan.body.diagnostics ?? [];
    for (const d of diagnostics) t.comment(`scan ${collection}: ${path.relative(sources, d.path)} ${d.code}: ${d.message}`);
    for (const skill of skills.filter((s) => s.collection === collection)) {
      const found = (scan.body.candidates ?? []).find((c) => c.sourcePath === skill.source);
      const said = diagnostics.filter((d) => d.path === skill.source).map((d) => `${d.code}: ${d.message}`);
      t.ok(found, `scan lists ${collection}/${skill.folder}${said.length > 0 ? ` (diagnostics: ${said.join('; ')})` : ''}`);
      if (!found) continue;
      t.equal(found.id, skill.id, `${skill.id}: the candidate's ID is its folder's`);
      t.equal(found.name, skill.frontMatter.name, `${skill.id}: the candidate's name is the front matter's`);
      candidates.set(skill.id, found);
      const warned = (found.warnings ?? []).map((w) => w.code);
      if (skill.frontMatter.name !== skill.folder) {
        t.ok(
          warned.includes('skill_name_mismatch'),
          `${skill.id}: the front matter's name "${skill.frontMatter.name}" differs from its folder: a warning beside the candidate says so`,
        );
      }
      if (skill.frontMatter.description.length > 1024) {
        t.ok(
          warned.includes('skill_description_too_long'),
          `${skill.id}: a description of ${skill.frontMatter.description.length} characters (over 1024): a warning beside the candidate says so`,
        );
      }
    }
    for (const archive of archives.filter((a) => path.dirname(a) === rootPath)) {
      t.ok(
        (scan.body.candidates ?? []).some((c) => c.sourcePath === archive) || diagnostics.some((d) => d.path === archive),
        `${collection}/${path.basename(archive)}: a skill archive is a candidate or a diagnostic, never skipped silently`,
      );
    }
  }

  // Import every candidate with its revision, but one: it is imported after a folder is deleted by hand.
  const held = skills.find((s) => s.id === 'executing-plans')!;
  const importOne = async (skill: Skill) => {
    const candidate = candidates.get(skill.id);
    if (!candidate) return undefined;
    const res = await api('POST', '/api/acp/resources/import', {
      id: skill.id,
      sourcePath: candidate.sourcePath,
      expectedRevision: candidate.sourceRevision,
    });
    t.equal(res.status, 200, `import ${skill.id}: ${res.status}${res.status === 200 ? '' : ` ${res.body.code}: ${res.body.message}`}`);
    return res;
  };
  for (const skill of skills) if (skill !== held) await importOne(skill);
  t.comment(`${seconds()} s: ${collections.length} collections scanned, ${skills.length - 1} skills imported`);

  // A skill folder deleted by hand is that skill's problem: another import is still published, the machine
  // shows the problem, and the owner can delete the skill and import it again.
  const broken = skills.find((s) => s.id === 'brand-guidelines')!;
  await rm(path.join(root, 'skills', broken.id), { recursive: true, force: true });
  const afterBreak = await importOne(held);
  if (afterBreak?.status === 200) {
    const listed = await until(
      `${held.id} published`,
      async () => ((await api('GET', '/api/acp/resources')).body.resources.some((r) => r.id === held.id) ? true : undefined),
      { within: 5_000 },
    ).catch(() => false);
    t.ok(listed, `${held.id} imported after ${broken.id}'s folder was deleted by hand is published`);
  }
  // The import publishes its own skill; serve's watcher publishes the set with the missing folder's problem.
  const mine = await until(
    `${broken.id}'s problem reported`,
    async () => {
      const machines = await api('GET', '/api/acp/machines');
      const entry = machines.body.machines.find((m) => m.machineId === MACHINE);
      return JSON.stringify(entry).includes(broken.id) ? entry : undefined;
    },
    { within: 10_000 },
  ).catch(() => undefined);
  t.equal(mine?.status, 'connected', 'the machine is still connected');
  t.match(JSON.stringify(mine), broken.id, `GET /machines shows ${broken.id}'s missing folder as that machine's problem`);
  const removed = await api('DELETE', `/api/acp/resources/${broken.id}`);
  t.equal(removed.status, 200, `the owner deletes ${broken.id} (its folder gone): ${removed.text}`);
  t.notOk(existsSync(path.join(root, 'receipts', `${broken.id}.json`)), `${broken.id}'s receipt is gone`);
  await importOne(broken);

  // Every skill: in the catalogue, its files as they were, its views reading right.
  const catalogue = await api('GET', '/api/acp/resources?schemaVersion=2');
  const canvasToken = await api('POST', '/api/acp/canvas-tokens', { canvasId: CANVAS, agentletId: MACHINE });
  t.equal(canvasToken.status, 201, canvasToken.text);
  recordIssuedToken(canvasToken.body.token);
  const agent = (url: string) => call(server.origin, 'GET', `/api/rfs/${CANVAS}${url}`, undefined, canvasToken.body.token);
  for (const skill of skills) {
    const record = catalogue.body.resources.find((r) => r.id === skill.id);
    t.match(record, { provider: MACHINE }, `${skill.id}: the record is in the catalogue`);
    t.ok(catalogue.body.manageableResourceIds.includes(skill.id), `${skill.id}: manageable`);
    const installed = path.join(root, 'skills', skill.id);
    t.same(await fileProblems(skill, installed), [], `${skill.id}: the installed folder has the fixture's files, bytes and run bits`);
    if (!record) continue;
    for (const [who, read] of [
      ['owner', (q: string) => api('GET', `/api/acp/resources/${skill.id}${q}`)],
      ['agent', (q: string) => agent(`/resources/${skill.id}${q}`)],
    ] as const) {
      const v1 = await read('');
      t.equal(v1.body.schemaVersion, 1, `${skill.id}: the ${who}'s default view is v1`);
      t.same(v1Problems(skill, v1.body), [], `${skill.id}: the ${who}'s v1 view reads the front matter and the body right`);
      const v2 = await read('?schemaVersion=2');
      t.equal(
        v2.body.sourceContent,
        skill.skillMd.replace(/^\uFEFF/, '').trim(),
        `${skill.id}: the ${who}'s v2 view holds the whole SKILL.md`,
      );
      t.equal(v2.body.name, skill.frontMatter.name, `${skill.id}: the ${who}'s v2 name is the front matter's`);
    }
  }

  // Every executable file of the corpus is executable once installed, and real scripts run.
  for (const rel of executables) {
    const [id, ...rest] = rel.split('/');
    const ok = await access(path.join(root, 'skills', id!, ...rest), constants.X_OK).then(
      () => true,
      () => false,
    );
    t.ok(ok, `${rel} is executable once installed`);
  }
  const taskBrief = await runFile(path.join(root, 'skills', 'subagent-driven-development', 'scripts', 'task-brief'), [], dir);
  t.same(
    [taskBrief.code, /usage: task-brief/.test(taskBrief.stderr)],
    [2, true],
    `task-brief runs and prints its usage: ${taskBrief.code}`,
  );
  const polluter = path.join(root, 'skills', 'systematic-debugging', 'find-polluter.sh');
  const usage = await runFile(polluter, [], dir);
  t.same([usage.code, /Usage:/.test(usage.stdout)], [1, true], `find-polluter.sh runs and prints its usage: ${usage.code}`);

  // The revision covers modes: the source's script loses its run bit, the refresh carries it, and back.
  const debugging = candidates.get('systematic-debugging');
  if (debugging) {
    const sourceScript = path.join(debugging.sourcePath, 'find-polluter.sh');
    const refreshScan = async () => (await api('POST', '/api/acp/resources/systematic-debugging/refresh/scan')).body.candidates?.[0];
    const mode = (await stat(sourceScript)).mode & 0o7777;
    await chmod(sourceScript, mode & ~0o111);
    const changed = await refreshScan();
    t.not(changed?.sourceRevision, debugging.sourceRevision, 'chmod -x on the source changes its revision');
    const refreshed = await api('POST', '/api/acp/resources/systematic-debugging/refresh', { expectedRevision: changed?.sourceRevision });
    t.equal(refreshed.status, 200, `refresh after chmod -x${refreshed.status === 200 ? '' : `: ${refreshed.text}`}`);
    t.equal((await stat(polluter)).mode & 0o111, 0, 'the refreshed copy is not executable');
    await chmod(sourceScript, mode);
    const back = await refreshScan();
    t.equal(back?.sourceRevision, debugging.sourceRevision, 'chmod +x back: the revision is the imported one again');
    const restored = await api('POST', '/api/acp/resources/systematic-debugging/refresh', { expectedRevision: back?.sourceRevision });
    t.equal(restored.status, 200, `refresh after chmod +x${restored.status === 200 ? '' : `: ${restored.text}`}`);
    t.same(
      await fileProblems(
        skills.find((s) => s.id === 'systematic-debugging')!,
        path.dirname(polluter),
      ),
      [],
      'the refresh restores the run bit',
    );
    t.equal((await runFile(polluter, [], dir)).code, 1, 'and the script runs again');
  }

  daemon.kill('SIGTERM');
  t.equal(await exited, 0, 'serve exits 0 on SIGTERM');
  t.notOk(log.includes(enrolled.body.token), 'serve never logged its token');
});
