// Which profiles a new agent can be started from: upstream's `listSelectableProfileIds` (microsoft/Huabu,
// external/agenetes/packages/agent-team/src/registry.ts). Every `acp-command` and `acp-harness` profile; a manifest-backed one
// only when its preparation is `ready`, its Agent Team member (same machine and manifest path) is `active`,
// and every required environment field of that member has a value. Pure; reads the Agent Team state as
// stored, so any shape it does not expect makes the profile unselectable rather than failing the list.
import { isJsonObject, type JsonObject } from '../migrations/profile-v1.js';
import type { AgentProfile } from '../schemas/profile.js';
import { isManifestBacked } from './profile-rules.js';

export interface TeamState {
  members: unknown;
  configs: unknown;
}

const list = (value: unknown): JsonObject[] => (Array.isArray(value) ? value.filter(isJsonObject) : []);

/**
 * A required field has a value when the member config stores one for it or the manifest gives a default.
 * Secret fields live in Huabu's secret store, which this service never sees: as upstream's registry without
 * a secret store does, a required secret field counts as missing.
 */
function configReady(member: JsonObject, config: JsonObject | undefined): boolean {
  const values = config && isJsonObject(config.values) ? config.values : {};
  return list(member.env).every((field) => {
    if (field.required !== true) return true;
    if (field.secret === true) return false;
    const value = Object.hasOwn(values, String(field.name)) ? values[String(field.name)] : field.default;
    return value !== undefined;
  });
}

export function selectableProfileIds(profiles: readonly AgentProfile[], team: TeamState): string[] {
  const members = list(team.members);
  const configs = list(team.configs);
  const sameMember = (entry: JsonObject, machine: string, manifestPath: string) =>
    entry.machine === machine && entry.manifestPath === manifestPath;
  return profiles
    .filter((profile) => {
      if (!isManifestBacked(profile)) return true;
      if (!isJsonObject(profile.preparation) || profile.preparation.status !== 'ready') return false;
      const { manifestPath } = profile.launch as { manifestPath: string };
      const member = members.find((m) => sameMember(m, profile.agentletId, manifestPath));
      if (!member || member.status !== 'active') return false;
      return configReady(
        member,
        configs.find((c) => sameMember(c, profile.agentletId, manifestPath)),
      );
    })
    .map((profile) => profile.id);
}
