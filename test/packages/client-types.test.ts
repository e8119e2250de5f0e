// The typed client's types hold: TypeScript itself compiles calls through `client.api` against the packed
// client's declarations. Right calls compile; a wrong body, a wrong path parameter, a path the API does not
// have and a misread answer do not.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** TypeScript's errors for `body` compiled as a module beside the tests (so it resolves the installed client). */
function typeErrors(body: string): string[] {
  const dir = mkdtempSync(path.join('test', '.client-types-'));
  try {
    const file = path.join(dir, 'calls.ts');
    writeFileSync(
      file,
      `import { RegistryClient } from '@agent-resource-registry/client';\nconst client = new RegistryClient({ baseUrl: 'http://127.0.0.1:1' });\n${body}\nexport {};\n`,
    );
    const program = ts.createProgram([file], {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
    });
    return ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file?.fileName === file || d.file === undefined)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const right = `
async function calls() {
  const put = await client.api.PUT('/api/acp/providers/{provider}/resources/{id}', {
    params: { path: { provider: 'mac-a', id: 'pdf' } },
    body: { schemaVersion: 2, name: 'PDF', sourceContent: 'Split PDFs.' },
  });
  const one = await client.api.GET('/api/acp/resources/{id}', { params: { path: { id: 'pdf' }, query: { schemaVersion: 2 } } });
  const list = await client.api.GET('/api/rfs/{canvasId}/resources', { params: { path: { canvasId: 'c' } } });
  return [put.data?.id, one.data?.id, list.data?.resources.length];
}
void calls;`;

t.test('right calls compile', (t) => {
  t.same(typeErrors(right), []);
  t.end();
});

t.test('wrong calls do not compile', (t) => {
  const wrong: [string, string][] = [
    [
      'a body missing a required field',
      `void client.api.PUT('/api/acp/providers/{provider}/resources/{id}', { params: { path: { provider: 'm', id: 'x' } }, body: { schemaVersion: 2, name: 'PDF' } });`,
    ],
    [
      'a body field of the wrong type',
      `void client.api.PUT('/api/acp/providers/{provider}/resources/{id}', { params: { path: { provider: 'm', id: 'x' } }, body: { schemaVersion: 3, name: 'PDF', sourceContent: 's' } });`,
    ],
    ['a missing path parameter', `void client.api.GET('/api/acp/resources/{id}', { params: { path: {} } });`],
    ['a path the API does not have', `void client.api.GET('/api/acp/no-such-route');`],
    ['a method the route does not have', `void client.api.DELETE('/api/acp/machines');`],
    [
      'a query value of the wrong type',
      `void client.api.GET('/api/acp/resources/{id}', { params: { path: { id: 'x' }, query: { schemaVersion: 'two' } } });`,
    ],
    [
      'an answer read as what it is not',
      `async function f() { const r = await client.api.GET('/api/acp/machines'); const n: string = r.data!.machines; return n; } void f;`,
    ],
  ];
  for (const [what, body] of wrong) t.not(typeErrors(body).length, 0, what);
  t.end();
});
