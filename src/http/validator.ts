// The request validator compiler: TypeBox's compiled check per schema, as @fastify/type-provider-typebox's
// TypeBoxValidatorCompiler does, with two differences.
// 1. A querystring, params or headers value is converted (`"true"` → `true`, `"5"` → `5`) only when it does
//    not pass as it came. Value.Convert walks the schema interpreted on every call (tens of microseconds
//    even for `{}`), which was the largest single cost of an authenticated 304; a value that
//    already passes is what conversion would have left alone for every schema the routes use (strings,
//    literals, booleans, optional fields). Bodies are never converted.
// 2. Errors of discriminated `oneOf` schemas (record v1 / v2 bodies) are narrowed to the branch the body's
//    `schemaVersion` names (src/schemas/discriminated-errors.ts).
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';
import { discriminatedErrors, type SchemaError } from '../schemas/discriminated-errors.js';

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  // Compiled on the first request that needs it, not while the server boots (start-up).
  let compiled: { check: ReturnType<typeof Compile<TSchema>>; discriminated: boolean } | undefined;
  const compile = () => (compiled ??= { check: Compile(schema), discriminated: JSON.stringify(schema).includes('"discriminator"') });
  const errors = (value: unknown): FastifySchemaValidationError[] => {
    const { check, discriminated } = compile();
    const all = [...check.Errors(value)] as unknown as SchemaError[];
    return (discriminated ? discriminatedErrors(schema, value, all) : all) as unknown as FastifySchemaValidationError[];
  };
  return (value) => {
    const { check } = compile();
    if (check.Check(value)) return { value };
    if (httpPart === 'body') return { error: errors(value) };
    const converted = Value.Convert(schema, value);
    if (check.Check(converted)) return { value: converted };
    return { error: errors(converted) };
  };
};
