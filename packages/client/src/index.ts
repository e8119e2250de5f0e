// @agent-resource-registry/client: the registry's OpenAPI types, its error codes, and a small typed fetch client.
export * from './client.js';
export * from './error-codes.js';
export type { components, operations, paths } from './api-types.js';
