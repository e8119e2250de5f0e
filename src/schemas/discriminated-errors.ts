// Validation errors of schemas with a `oneOf` told apart by a `discriminator` (record v1 / v2 bodies):
// only the branch the value's `schemaVersion` names is reported, so a v2 body with a v1 field is told
// about that field, not about every rule of v1. Leaf module, framework-free.
import type { TSchema } from 'typebox';

export interface SchemaError {
  keyword: string;
  schemaPath: string;
  instancePath: string;
  params: unknown;
  message: string;
}

function pointer(root: unknown, path: string): unknown {
  let node = root;
  for (const raw of path.split('/').slice(1)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

interface Discriminated {
  oneOf: { properties?: Record<string, { const?: unknown }> }[];
  discriminator: { propertyName: string };
}

function isDiscriminated(node: unknown): node is Discriminated {
  const n = node as Partial<Discriminated> | undefined;
  return !!n && Array.isArray(n.oneOf) && typeof n.discriminator?.propertyName === 'string';
}

interface Placement {
  holder: Discriminated;
  /** The instance pointer of the value the discriminated oneOf checked. */
  at: string;
  branch: number;
  tag: unknown;
}

/** Where an error sits relative to the outermost discriminated `oneOf` on its schema path, if any. */
function placement(schema: TSchema, value: unknown, e: SchemaError): (Placement & { inBranch: number }) | undefined {
  const segments = e.schemaPath
    .replace(/^#\/?/, '')
    .split('/')
    .filter((x) => x !== '');
  const instance = e.instancePath.split('/').slice(1);
  let node: unknown = schema;
  let at = '';
  let consumed = 0;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg === 'oneOf' && isDiscriminated(node)) {
      const holder = node;
      const target = pointer(value, at);
      const tag =
        target !== null && typeof target === 'object' ? (target as Record<string, unknown>)[holder.discriminator.propertyName] : undefined;
      const branch = holder.oneOf.findIndex((b) => b.properties?.[holder.discriminator.propertyName]?.const === tag);
      const next = segments[i + 1];
      return { holder, at, branch, tag, inBranch: next === undefined ? -1 : Number(next) };
    }
    if (seg === 'properties' && i + 1 < segments.length) {
      at += `/${instance[consumed++] ?? segments[i + 1]}`;
      node = (node as { properties?: Record<string, unknown> }).properties?.[segments[++i]!];
      continue;
    }
    if (seg === 'items') at += `/${instance[consumed++] ?? ''}`;
    node = (node as Record<string, unknown>)?.[seg];
  }
  return undefined;
}

/**
 * Keeps the errors of the branch named by the discriminator; when no branch is named (a missing or unknown
 * `schemaVersion`), one error about the discriminator itself. Other errors pass through unchanged.
 */
export function discriminatedErrors(schema: TSchema, value: unknown, errors: readonly SchemaError[]): SchemaError[] {
  const out: SchemaError[] = [];
  const unnamed = new Set<string>();
  for (const e of errors) {
    // The summary ("must match exactly one schema in oneOf") says nothing the branch's own errors do not.
    if (e.keyword === 'oneOf' && isDiscriminated(pointer(schema, e.schemaPath.replace(/^#/, '')))) continue;
    const p = placement(schema, value, e);
    if (!p) {
      out.push(e);
      continue;
    }
    if (p.branch === -1) {
      if (unnamed.has(p.at)) continue;
      unnamed.add(p.at);
      const name = p.holder.discriminator.propertyName;
      const allowed = p.holder.oneOf.map((b) => JSON.stringify(b.properties?.[name]?.const)).join(' or ');
      out.push({
        keyword: 'discriminator',
        schemaPath: e.schemaPath,
        instancePath: `${p.at}/${name}`,
        params: { allowed },
        message: `must be ${allowed}`,
      });
      continue;
    }
    if (p.inBranch === p.branch) out.push(e);
  }
  return out;
}
