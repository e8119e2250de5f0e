// docs/CONTRACT.md's route tables, generated from the OpenAPI document (itself generated from the route
// schemas): one section per tag, one row per operation with its caller (the security schemes), its summary
// and description, and what it answers (statuses and error codes). The route schema is the one source of a
// route's words; the page holds them between two markers and `npm run generate` rewrites them.
// Run alone, `node dist/scripts/contract-routes.js [--check]` regenerates (or checks) the page from the
// committed openapi/openapi.json.
import { readFile, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';

export const CONTRACT_FILE = 'docs/CONTRACT.md';
export const BEGIN = '<!-- routes: generated from the route schemas by `npm run generate`; edit the schemas, not this table -->';
export const END = '<!-- end of generated routes -->';

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  responses?: Record<string, { description?: string }>;
}
interface Document {
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
/** The refusals every protected route answers; the page says them once, under "Callers and credentials". */
const SHARED_REFUSALS = new Set(['unauthorized', 'forbidden', 'rate_limited']);
const CALLERS: Record<string, string> = {
  ownerToken: 'owner',
  providerToken: 'a provider (`huabu` or a machine)',
  canvasToken: 'canvas token',
  resourceGrant: 'grant (`X-Huabu-Resource-Grant`)',
};

const cell = (text: string) =>
  text
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\|/g, '\\|')
    .trim();
const sentence = (text: string) => (/[.!?]$/.test(text) ? text : `${text}.`);

function caller(security: Operation['security']): string {
  if (!security || security.length === 0) return 'anyone';
  return security
    .map((alternative) =>
      Object.keys(alternative)
        .map((s) => CALLERS[s] ?? s)
        .join(' with '),
    )
    .join(', or ');
}

function answers(responses: Operation['responses']): string {
  const parts: string[] = [];
  for (const [status, response] of Object.entries(responses ?? {})) {
    if (Number(status) < 400) {
      parts.push(status);
      continue;
    }
    const codes = [...(response.description ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
    const own = codes.filter((c) => !SHARED_REFUSALS.has(c));
    if (codes.length === 0) parts.push(status);
    else if (own.length > 0) parts.push(`${status} ${own.map((c) => `\`${c}\``).join(', ')}`);
  }
  return parts.join('; ');
}

/** The generated Markdown: a section per tag, in the document's tag order, and a row per operation. */
export function routeTables(doc: Document): string {
  const byTag = new Map<string, string[]>();
  for (const { name } of doc.tags ?? []) byTag.set(name, []);
  for (const [urlPath, operations] of Object.entries(doc.paths))
    for (const method of METHODS) {
      const op = operations[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'other';
      const words = [op.summary ? `**${sentence(cell(op.summary))}**` : '', op.description ? cell(op.description) : ''].filter(Boolean);
      const route = `\`${method.toUpperCase()} ${urlPath.replace(/\{([^}]+)\}/g, ':$1')}\``;
      const row = `| ${route} | ${caller(op.security)} | ${words.join(' ')} | ${answers(op.responses)} |`;
      byTag.set(tag, [...(byTag.get(tag) ?? []), row]);
    }
  const sections: string[] = [];
  for (const [tag, rows] of byTag) {
    if (rows.length === 0) continue;
    const about = doc.tags?.find((t) => t.name === tag)?.description;
    sections.push(
      [
        `### ${tag[0]!.toUpperCase()}${tag.slice(1)}`,
        '',
        ...(about ? [cell(about), ''] : []),
        '| route | caller | what it does | answers |',
        '|---|---|---|---|',
        ...rows,
      ].join('\n'),
    );
  }
  return sections.join('\n\n');
}

/** `page` with its generated part replaced by the tables of `doc`; throws when the markers are missing. */
export function withRouteTables(page: string, doc: Document): string {
  const begin = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${CONTRACT_FILE} must hold the markers\n${BEGIN}\n${END}`);
  return `${page.slice(0, begin + BEGIN.length)}\n\n${routeTables(doc)}\n\n${page.slice(end)}`;
}

/** What docs/CONTRACT.md should hold for the OpenAPI document `openapiJson`. */
export async function generateContract(openapiJson: string, file = CONTRACT_FILE): Promise<string> {
  return withRouteTables(await readFile(file, 'utf8'), JSON.parse(openapiJson) as Document);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const fresh = await generateContract(await readFile('openapi/openapi.json', 'utf8'));
  if (!process.argv.includes('--check')) await writeFile(CONTRACT_FILE, fresh);
  else if ((await readFile(CONTRACT_FILE, 'utf8')) !== fresh) {
    console.error(`${CONTRACT_FILE} is out of date with the route schemas; run \`npm run generate\` and commit the result.`);
    process.exit(1);
  }
}
