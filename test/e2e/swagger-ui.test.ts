// End to end: the real built server as a child process, Swagger UI at /docs driven in Debian's Chromium
// (playwright-core, never a browser download). Lists the operations; shows the project's licence, each
// operation's own examples, an empty catalogue filter and the owner token first in the Authorize dialog;
// runs "Try it out" on GET /healthz, then authorizes with the owner token and runs GET /api/acp/resources.
// Screenshots go to .tap/screenshots/ (kept after the run, never committed).
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, openSync, closeSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CANARY, canaryLogFile, tempDataDir, testEnv } from '../helpers/build.js';
import { ensureBuilt } from '../helpers/built.js';
import { freePort } from '../helpers/sockets.js';

const CHROMIUM = '/usr/bin/chromium';
// tap runs from the project's root; `npm test` runs this file compiled, under dist/test.
const ROOT = process.cwd();
const SERVER = path.join(ROOT, 'dist', 'src', 'server.js');
const READY_WITHIN_MS = 60_000;
const SCREENSHOTS = path.join(ROOT, '.tap', 'screenshots');

interface RunningServer {
  baseUrl: string;
  child: ChildProcess;
  logFile: string;
}

async function startServer(t: { teardown(fn: () => unknown): void }): Promise<RunningServer> {
  ensureBuilt();
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const logFile = canaryLogFile();
  const fd = openSync(logFile, 'a');
  const env = testEnv(await tempDataDir(), { PORT: String(port), HOST: '127.0.0.1', PUBLIC_BASE_URL: baseUrl });
  // Only what the process needs from this one, plus the test environment: no inherited secrets.
  const child = spawn(process.execPath, [SERVER], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const exited = once(child, 'exit').catch(() => undefined);
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  });

  const deadline = Date.now() + READY_WITHIN_MS;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`server exited with ${child.exitCode} before it was ready; log:\n${readFileSync(logFile, 'utf8')}`);
    try {
      const res = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      if (res.status === 200) return { baseUrl, child, logFile };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server not ready within ${READY_WITHIN_MS} ms; log:\n${readFileSync(logFile, 'utf8')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The response table Swagger UI renders for the last execution of one operation. */
function liveResponse(page: Page, operation: string) {
  const block = page.locator(`#${operation}`);
  return {
    status: block.locator('.live-responses-table tbody .response-col_status'),
    body: block.locator('.live-responses-table tbody .response-col_description .highlight-code pre'),
  };
}

async function tryItOut(page: Page, operation: string): Promise<void> {
  const block = page.locator(`#${operation}`);
  await block.locator('.opblock-summary-control').click();
  await block.locator('button.try-out__btn').click();
  await block.locator('button.execute').click();
}

/** The operation block of `method path`. */
function operation(page: Page, method: string, urlPath: string) {
  return page
    .locator('.opblock')
    .filter({ has: page.locator('.opblock-summary-method', { hasText: new RegExp(`^${method}$`) }) })
    .filter({ has: page.locator(`[data-path="${urlPath}"]`) });
}

/** The example Swagger UI shows for one documented response of an expanded operation. */
async function responseExample(block: ReturnType<typeof operation>, status: number): Promise<string> {
  const row = block.locator(`.responses-table tr.response[data-code="${status}"]`);
  return (await row.locator('.example .highlight-code pre, .model-example .highlight-code pre').first().textContent()) ?? '';
}

/** Authorizes one security scheme with `token` through Swagger UI's dialog. */
async function authorize(page: Page, scheme: string, token: string): Promise<void> {
  await page.locator('.auth-wrapper button.authorize').click();
  const dialog = page.locator('.dialog-ux .modal-ux');
  const box = dialog.locator('.auth-container').filter({ has: page.locator('h4', { hasText: scheme }) });
  await box.locator('input[aria-label="auth-bearer-value"]').fill(token);
  await box.locator('button.authorize').click();
  await box.locator('h6', { hasText: 'Authorized' }).waitFor();
  await dialog.locator('button.btn-done').first().click();
  await dialog.waitFor({ state: 'detached' });
}

const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI) {
  t.fail(`${CHROMIUM} is missing: CI must install Debian's chromium (.ci/run does)`);
} else {
  t.test(
    'Swagger UI in a real browser',
    { skip: missing ? `${CHROMIUM} is missing (apt-get install chromium); skipping the browser test` : false },
    async (t) => {
      const started = Date.now();
      const server = await startServer(t);

      const browser: Browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--disable-quic',
        ],
      });
      t.teardown(() => browser.close());
      const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
      page.setDefaultTimeout(10_000);

      // Everything JSON the browser receives goes where the canary scan looks.
      const bodiesFile = canaryLogFile();
      const pending: Promise<void>[] = [];
      page.on('response', (res) => {
        if (!(res.headers()['content-type'] ?? '').includes('json')) return;
        pending.push(
          res.text().then(
            (body) => appendFileSync(bodiesFile, `${res.url()} ${res.status()}\n${body}\n`),
            () => {},
          ),
        );
      });

      await page.goto(`${server.baseUrl}/docs`);
      // The first render parses the whole document: on a loaded machine that takes longer than one click.
      await page.locator('.opblock-tag-section').first().waitFor({ timeout: 60_000 });

      await t.test('lists the tag sections and the operations', async (t) => {
        const tags = await page.locator('h3.opblock-tag').evaluateAll((els) => els.map((e) => e.getAttribute('data-tag')));
        for (const tag of ['operations', 'catalogue', 'machines', 'canvas tokens', 'providers', 'rfs'])
          t.ok(tags.includes(tag), `tag section ${tag}`);
        const ops = await page
          .locator('.opblock-summary')
          .evaluateAll((els) =>
            els.map(
              (e) =>
                `${e.querySelector('.opblock-summary-method')?.textContent} ${e.querySelector('[data-path]')?.getAttribute('data-path')}`,
            ),
          );
        t.ok(ops.includes('GET /healthz'), 'GET /healthz is listed');
        t.ok(ops.includes('GET /readyz'), 'GET /readyz is listed');
        t.ok(
          ops.includes('PUT /api/acp/providers/{provider}/resources/{id}'),
          'PUT /api/acp/providers/{provider}/resources/{id} is listed',
        );
        t.ok(ops.includes('GET /api/acp/resources'), 'GET /api/acp/resources is listed');
      });

      await t.test('the licence is MIT, not UNLICENSED', async (t) => {
        const info = page.locator('.information-container .info');
        const licence = info.locator('.info__license');
        t.equal((await licence.textContent())?.trim(), 'MIT');
        t.notMatch(await info.textContent(), /UNLICENSED/);
      });

      await t.test('the Authorize dialog lists the owner token first and opens on it', async (t) => {
        await page.locator('.auth-wrapper button.authorize').click();
        const dialog = page.locator('.dialog-ux .modal-ux');
        await dialog.locator('.auth-container').first().waitFor();
        const schemes = await dialog.locator('.auth-container h4').allTextContents();
        t.match(schemes[0], /^ownerToken/, 'the owner token comes first');
        t.match(schemes[schemes.length - 1], /^resourceGrant/, 'the resource grant, sent with a canvas token, comes last');
        // The focus and the dialog's scroll position say where it opened.
        await page.waitForFunction("document.activeElement && document.activeElement.closest('.auth-container') !== null");
        const focused = await dialog
          .locator('.auth-container')
          .evaluateAll((boxes) => boxes.findIndex((box) => box.contains(box.ownerDocument.activeElement)));
        t.equal(focused, 0, "the first scheme's field has the focus");
        t.equal(await dialog.locator('.modal-ux-content').evaluate((e) => e.scrollTop), 0, 'the dialog is scrolled to its top');
        mkdirSync(SCREENSHOTS, { recursive: true });
        await page.screenshot({ path: path.join(SCREENSHOTS, 'swagger-ui-authorize.png') });
        await dialog.locator('button.close-modal').click();
        await dialog.waitFor({ state: 'detached' });
      });

      await t.test("the catalogue's Try it out starts with an empty provider filter", async (t) => {
        const block = operation(page, 'GET', '/api/acp/resources');
        await block.locator('.opblock-summary-control').click();
        await block.locator('button.try-out__btn').click();
        t.equal(await block.locator('tr[data-param-name="provider"] input').inputValue(), '', 'provider is empty');
        await block.locator('button.try-out__btn.cancel').click();
        await block.locator('.opblock-summary-control').click();
      });

      await t.test('an operation shows its own examples: a real record, and each error as sent', async (t) => {
        const block = operation(page, 'GET', '/api/acp/resources/{id}');
        await block.locator('.opblock-summary-control').click();
        await block.locator('.responses-table').first().waitFor();
        const ok = await responseExample(block, 200);
        t.match(ok, /"id":\s*"web-search"/, 'the 200 example is a record');
        t.match(ok, /"name":\s*"Web search"/);
        t.notMatch(ok, /"string"/, 'no placeholder strings');
        const missing = await responseExample(block, 404);
        t.match(missing, /"statusCode":\s*404/, 'the 404 example says 404');
        t.match(missing, /"code":\s*"resource_not_found"/, 'with the code this operation answers');
        t.notMatch(missing, /"statusCode":\s*0/);
        const refused = await responseExample(block, 401);
        t.match(refused, /"statusCode":\s*401/);
        t.match(refused, /"code":\s*"unauthorized"/);
        mkdirSync(SCREENSHOTS, { recursive: true });
        await block.screenshot({ path: path.join(SCREENSHOTS, 'swagger-ui-get-resource.png') });
        await block.locator('.opblock-summary-control').click();
      });

      await t.test('"Try it out" on GET /healthz renders 200 {"status": "ok"}', async (t) => {
        await tryItOut(page, 'operations-operations-getHealth');
        const res = liveResponse(page, 'operations-operations-getHealth');
        await res.status.waitFor();
        t.equal((await res.status.textContent())?.trim(), '200');
        t.match(await res.body.textContent(), /"status":\s*"ok"/);
      });

      await t.test('authorized with the owner token, GET /api/acp/resources renders 200', async (t) => {
        await authorize(page, 'ownerToken', CANARY.owner);

        const block = page
          .locator('.opblock')
          .filter({ has: page.locator('.opblock-summary-method', { hasText: /^GET$/ }) })
          .filter({ has: page.locator('[data-path="/api/acp/resources"]') });
        const id = await block.getAttribute('id');
        t.ok(id, 'GET /api/acp/resources has an operation block');
        await tryItOut(page, id!);
        const res = liveResponse(page, id!);
        await res.status.waitFor();
        t.equal((await res.status.textContent())?.trim(), '200');
        t.match(await res.body.textContent(), /"resources":\s*\[/);
      });

      await t.test('the provider PUT offers a v1 and a v2 example, and each is sent and stored in its version', async (t) => {
        await authorize(page, 'providerToken', CANARY.huabu);

        const block = page
          .locator('.opblock')
          .filter({ has: page.locator('.opblock-summary-method', { hasText: /^PUT$/ }) })
          .filter({ has: page.locator('[data-path="/api/acp/providers/{provider}/resources/{id}"]') });
        const id = await block.getAttribute('id');
        t.ok(id, 'the provider PUT has an operation block');
        await block.locator('.opblock-summary-control').click();
        await block.locator('button.try-out__btn').click();
        const examples = block.locator('.opblock-section-request-body .examples-select select');
        const labels = await examples.locator('option').allTextContents();
        t.same(
          labels.map((l) => l.trim()),
          ['Record v1', 'Record v2'],
          'one named example per record version',
        );

        for (const [label, resourceId, version] of [
          ['Record v1', 'swagger-ui-v1', 1],
          ['Record v2', 'swagger-ui-v2', 2],
        ] as const) {
          await examples.selectOption({ label });
          await block.locator('tr[data-param-name="provider"] input').fill('huabu');
          await block.locator('tr[data-param-name="id"] input').fill(resourceId);
          const body = await block.locator('textarea.body-param__text').inputValue();
          t.equal(JSON.parse(body).schemaVersion, version, `${label}: the body Swagger UI will send is v${version}`);
          await block.locator('button.execute').click();
          const res = liveResponse(page, id!);
          await res.status.filter({ hasText: '201' }).waitFor();
          t.equal((await res.status.textContent())?.trim(), '201', `${label}: created`);
          t.match(await res.body.textContent(), new RegExp(`"schemaVersion":\\s*${version}`), `${label}: answered in v${version}`);
          // Read back as its own version: the record is stored as the example's version, field for field.
          const stored = await fetch(`${server.baseUrl}/api/acp/resources/${resourceId}?schemaVersion=${version}`, {
            headers: { authorization: `Bearer ${CANARY.owner}` },
          });
          t.equal(stored.status, 200);
          const record = (await stored.json()) as Record<string, unknown>;
          const sent = JSON.parse(body) as Record<string, unknown>;
          for (const [k, v] of Object.entries(sent)) t.equal(record[k], v, `${label}: stored ${k}`);
          // Clear the previous response so the next wait sees the next execution.
          await block
            .locator('button.btn-clear')
            .click()
            .catch(() => undefined);
        }
      });

      mkdirSync(SCREENSHOTS, { recursive: true });
      const shot = path.join(SCREENSHOTS, 'swagger-ui.png');
      // The curl box shows the Authorization header: keep the token out of the picture.
      await page.screenshot({ path: shot, fullPage: true, mask: [page.locator('.curl-command')] });
      await Promise.all(pending);
      t.comment(`screenshot: ${shot}; browser test took ${Date.now() - started} ms`);
    },
  );
}
