// The message for properties a body must not have. A name this service's own record schemas define (a v1
// field in a v2 body, an owner field in a provider body) is named, so the client learns which field to drop;
// any other name is only counted, never echoed: a client that pastes a token where a key belongs would get
// it back in the response (and in every log and proxy on the way). Leaf module, framework-free.
import { AgentResource, AgentResourceV2, ResourceCustomization } from './resource.js';

const KNOWN_FIELDS: ReadonlySet<string> = new Set(
  [AgentResource, AgentResourceV2, ResourceCustomization].flatMap((schema) => Object.keys(schema.properties)),
);

export function unknownPropertiesMessage(names: readonly string[]): string {
  const known = names.filter((n) => KNOWN_FIELDS.has(n));
  const others = names.length - known.length;
  const parts = [
    ...(known.length > 0 ? [known.join(', ')] : []),
    ...(others > 0 ? [`${others} unknown; ${others === 1 ? 'its name is' : 'their names are'} not echoed`] : []),
  ];
  return `must not have additional properties: ${parts.join('; ')}`;
}
