// The control-character classes are written once, in src/text/text-rules.ts: no other source file spells a
// class of control characters again (a range between two escaped C0 or DEL characters, or a Unicode
// property of the control characters), in a string, a template or a regular expression, so what a schema, a
// domain check, an archive or the terminal refuses cannot drift apart.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const HOME = 'src/text/text-rules.ts';

/** A control-character class as source text: `\u0000-\u001F`, `\\x00-\\x1f`, `\u007F-\u009F`, `\p{Cc}`, `\p{Control}`. */
const CONTROL_CLASS =
  /\\{1,2}(?:u00[01][0-9a-f]|x[01][0-9a-f]|u007f|x7f)-\\{1,2}(?:u00[0-9a-f]{2}|x[0-9a-f]{2})|\\{1,2}p\{(?:Cc|Control|cntrl|gc=Cc|General_Category=Cc|General_Category=Control)\}/i;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(full).isDirectory()) return sources(full);
    return name.endsWith('.ts') ? [full.split(path.sep).join('/')] : [];
  });
}

/** Where a file's string, template or regular-expression literals spell a control-character class (`file:line`). */
function controlClasses(file: string, text = readFileSync(file, 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isStringLiteral(node) ||
        ts.isNoSubstitutionTemplateLiteral(node) ||
        ts.isTemplateHead(node) ||
        ts.isTemplateMiddle(node) ||
        ts.isTemplateTail(node) ||
        ts.isRegularExpressionLiteral(node)) &&
      CONTROL_CLASS.test(node.getText(source))
    )
      found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

t.test('the guard sees a class written as a string, a template or a regular expression, and nothing else', (t) => {
  t.same(controlClasses(HOME).length > 0, true, 'text-rules.ts itself writes them');
  const sample = [
    "const a = '^[^\\\\u0000-\\\\u001F\\\\u007F]*$';",
    'const b = /[\\u0000-\\u001F\\u007F]/;',
    'const c = /(?![\\n\\t])[\\p{Cc}]/gu;',
    'const d = `[\\\\x00-\\\\x1f${e}]`;',
    "const f = 'a\\u0000b'; const g = /[\\u202A-\\u202E]/; const h = '\\u0000';",
  ].join('\n');
  t.same(controlClasses('sample.ts', sample), ['sample.ts:1', 'sample.ts:2', 'sample.ts:3', 'sample.ts:4']);
  t.end();
});

t.test(`no source file but ${HOME} writes a control-character class`, (t) => {
  const files = [...sources('src'), ...sources('packages')].filter((f) => f !== HOME);
  t.ok(files.length > 100, `${files.length} files read`);
  t.same(
    files.flatMap((f) => controlClasses(f)),
    [],
  );
  t.end();
});
