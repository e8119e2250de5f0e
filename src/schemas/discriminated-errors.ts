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

/**
 * Keeps the errors of the branch named by the discriminator; when no branch is named (a missing or unknown
 * `schemaVersion`), one error about the discriminator itself. Other errors pass through unchanged.
 */
export function discriminatedErrors(schema: TSchema, value: unknown, errors: readonly SchemaError[]): SchemaError[] {
  // The `oneOf` summaries: where each discriminated oneOf failed (schema holder path, instance path).
  const failures = errors
    .filter((e) => e.keyword === 'oneOf' && isDiscriminated(pointer(schema, e.schemaPath.replace(/^#/, ''))))
    .map((e) => {
      const holder = pointer(schema, e.schemaPath.replace(/^#/, '')) as Discriminated;
      const instance = pointer(value, e.instancePath);
      const tag = instance !== null && typeof instance === 'object' ? (instance as Record<string, unknown>)[holder.discriminator.propertyName] : undefined;
      const branch = holder.oneOf.findIndex((b) => b.properties?.[holder.discriminator.propertyName]?.const === tag);
      return { summary: e, holder, branch, prefix: `${e.schemaPath}/oneOf/` };
    });
  if (failures.length === 0) return [...errors];
  const out: SchemaError[] = [];
  for (const e of errors) {
    const failure = failures.find((f) => f.summary === e);
    if (failure) {
      if (failure.branch === -1) {
        const name = failure.holder.discriminator.propertyName;
        const allowed = failure.holder.oneOf.map((b) => JSON.stringify(b.properties?.[name]?.const)).join(' or ');
        out.push({ ...e, keyword: 'discriminator', instancePath: `${e.instancePath}/${name}`, message: `must be ${allowed}` });
      }
      continue;
    }
    const at = (f: (typeof failures)[number]) => e.instancePath === f.summary.instancePath || e.instancePath.startsWith(`${f.summary.instancePath}/`);
    const inside = failures.find((f) => e.schemaPath.startsWith(f.prefix) && at(f));
    if (!inside) {
      out.push(e);
      continue;
    }
    if (inside.branch !== -1 && e.schemaPath.startsWith(`${inside.prefix}${inside.branch}`) && /^[/]|^$/.test(e.schemaPath.slice(`${inside.prefix}${inside.branch}`.length))) out.push(e);
  }
  return out;
}
