// The request validator: TypeBox's, with errors of discriminated `oneOf` schemas (record v1 / v2 bodies)
// narrowed to the branch the body's `schemaVersion` names (src/schemas/discriminated-errors.ts).
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { discriminatedErrors, type SchemaError } from '../schemas/discriminated-errors.js';

export const validatorCompiler: FastifySchemaCompiler<TSchema> = (route) => {
  const validate = TypeBoxValidatorCompiler(route) as (value: unknown) => { value?: unknown; error?: Iterable<SchemaError> };
  if (!JSON.stringify(route.schema).includes('"discriminator"')) return validate as ReturnType<FastifySchemaCompiler<TSchema>>;
  return ((value: unknown) => {
    const result = validate(value);
    if (!result.error) return result;
    return { error: discriminatedErrors(route.schema, value, [...result.error]) };
  }) as ReturnType<FastifySchemaCompiler<TSchema>>;
};
