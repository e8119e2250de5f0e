// Agent Profiles for the tests: a stored record (for the stores and the pure core) and the create bodies a
// client sends (the owner's, and the Huabu UI's). Each test names only the fields it is about.
import type { AgentProfile } from '../../src/schemas/profile.js';

/** A stored profile (schema 2) of machine `mac-a`, selecting nothing; `over` sets any field. */
export function profileRecord(id: string, over: Partial<AgentProfile> = {}): AgentProfile {
  return {
    schemaVersion: 2,
    id,
    alias: `Alias of ${id}`,
    agentletId: 'mac-a',
    workingDirPath: '/home/me/site',
    resourceIds: [],
    launch: { kind: 'acp-command', command: 'agent' },
    ...over,
  };
}

/** The body of `POST /api/acp/profiles` as the owner sends it; `fields` replace or add any field. */
export function profileBody(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    alias: 'Reviewer',
    agentletId: 'mac-a',
    workingDirPath: '/home/me/site',
    launch: { kind: 'acp-command', command: 'claude-code-acp' },
    ...fields,
  };
}

/** A create body as the Huabu UI's profile editor sends it: no agentletId, a CLI id and an icon. */
export function uiProfileBody(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    alias: 'Copilot',
    workingDirPath: '/home/me/site',
    launch: { kind: 'acp-command', command: 'copilot --acp' },
    metadata: { cliId: 'copilot' },
    customData: { icon: { shape: 'diamond', color: 'green' } },
    ...fields,
  };
}
