// The request validator compiler: TypeBox's compiled check per schema, as @fastify/type-provider-typebox's
// TypeBoxValidatorCompiler does, but a querystring, params or headers value is converted (`"true"` →
// `true`, `"5"` → `5`) only when it does not pass as it came. Value.Convert walks the schema interpreted on
// every call (tens of microseconds even for `{}`), which was the largest single cost of an authenticated
// 304 (issue 15); a value that already passes is what conversion would have left alone for every schema
// the routes use (strings, literals, booleans, optional fields). Bodies are never converted.
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  return (value) => {
    if (check.Check(value)) return { value };
    if (httpPart === 'body') return { error: check.Errors(value) as FastifySchemaValidationError[] };
    const converted = Value.Convert(schema, value);
    if (check.Check(converted)) return { value: converted };
    return { error: check.Errors(converted) as FastifySchemaValidationError[] };
  };
};
