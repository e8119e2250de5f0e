// The example records the routes' OpenAPI examples are made of (Swagger UI at /docs shows them): one small,
// consistent world — the host's `web-search`, machine `agentlet-7f3a` with its `pdf-grep` skill, the profile
// "Reviewer" on that machine, and thread `thread-1` of canvas `canvas-42` launched with it. A route writes its
// own example next to its schema (`answer(...)`, src/http/openapi.ts) from these; tokens are visibly fake.
import type { Static } from 'typebox';
import type { AgentResource, AgentResourceV2 } from '../schemas/resource.js';
import type { ProfileView } from '../schemas/profile.js';
import type { WorkloadRecord } from '../schemas/workload.js';
import type { Machine } from '../schemas/machine.js';
import type { ScanSkillsResult } from '../schemas/skill.js';
import { bootstrapPreamble, mcpServerEntry } from '../workloads/bootstrap.js';
import type { ChangeEventSchema } from '../schemas/events.js';

export const MACHINE_ID = 'agentlet-7f3a';
export const CANVAS_ID = 'canvas-42';
export const THREAD_ID = 'thread-1';
export const PROFILE_ID = 'prf-k7m2q9x4b8n3c5vd';
export const RFS_URL = `https://registry.example.internal:8787/api/rfs/${CANVAS_ID}`;
export const AT = '2026-03-14T09:26:53.000Z';
export const EXPIRES_AT = '2026-03-14T10:26:53.000Z';
/** A fingerprint as the secret scan names one (`<rule>:<SHA-256 hex>`). */
export const FINGERPRINT = 'github-pat:9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c0b2d4f6e8a1c3e5b7d9f0a2c4e6b8d0f';
/** A skill folder's revision (SHA-256 hex). */
export const SOURCE_REVISION = '5d41402abc4b2a76b9719d911017c592b8c3e0f1a2d4c6e8f0a1b3c5d7e9f1a3';

export const WEB_SEARCH_V1: AgentResource = {
  schemaVersion: 1,
  id: 'web-search',
  name: 'Web search',
  provider: 'huabu',
  description: 'Searches the public web and answers titles, links and snippets.',
  instructions:
    'Invoke it through the host: POST $HUABU_RFS_URL/resources/web-search/invoke with {"schemaVersion": 1, "input": {"query": "..."}}, the canvas token and your grant.',
};

export const WEB_SEARCH_V2: AgentResourceV2 = {
  schemaVersion: 2,
  id: 'web-search',
  name: 'Web search',
  provider: 'huabu',
  sourceContent: `${WEB_SEARCH_V1.description}\n\n${WEB_SEARCH_V1.instructions}`,
  userContent: '',
};

export const PDF_GREP_V1: AgentResource = {
  schemaVersion: 1,
  id: 'pdf-grep',
  name: 'PDF grep',
  provider: MACHINE_ID,
  description: 'Searches text in PDF files.',
  instructions: 'Run $AGENT_RESOURCE_DIR/tools/pdf-grep.sh PATTERN FILE.',
};

export const PDF_GREP_V2: AgentResourceV2 = {
  schemaVersion: 2,
  id: 'pdf-grep',
  name: 'PDF grep',
  displayName: 'Grep in PDFs',
  provider: MACHINE_ID,
  sourceContent:
    '---\nname: pdf-grep\ndescription: Searches text in PDF files.\n---\n\nRun `scripts/pdf-grep.sh PATTERN FILE` from this folder.',
  userContent: 'Prefer this to opening PDFs page by page.',
};

export const PROFILE: ProfileView = {
  schemaVersion: 2,
  id: PROFILE_ID,
  revision: 3,
  alias: 'Reviewer',
  agentletId: MACHINE_ID,
  workingDirPath: '/home/me/projects/site',
  resourceIds: ['web-search', 'pdf-grep'],
  metadata: { cliId: 'claude-code' },
  launch: { kind: 'acp-harness', harnessId: 'claude-code' },
};

export const WORKLOAD: WorkloadRecord = {
  driverSchemaVersion: 1,
  canvasId: CANVAS_ID,
  threadId: THREAD_ID,
  realizedAt: AT,
  spec: {
    binding: { profileId: PROFILE_ID, alias: 'Reviewer' },
    agentletId: MACHINE_ID,
    cwd: '/home/me/projects/site',
    resourceIds: ['web-search', 'pdf-grep'],
    resourceScope: { canvasId: CANVAS_ID, threadId: THREAD_ID },
    initialPreamble: [bootstrapPreamble(['web-search', 'pdf-grep'])],
    env: { HUABU_RFS_URL: RFS_URL, HUABU_MCP_URL: `${RFS_URL}/mcp`, HUABU_THREAD_ID: THREAD_ID },
    mcpServers: [mcpServerEntry(`${RFS_URL}/mcp`)],
    launch: { kind: 'acp-harness', harnessId: 'claude-code' },
  },
};

/** A drift report: one pin still the same, one changed since the launch. */
export const DRIFT_REPORT = {
  pins: [
    { id: 'web-search', pinned: `sha256:${'3'.repeat(64)}`, current: `sha256:${'3'.repeat(64)}`, state: 'same' as const },
    {
      id: 'pdf-grep',
      pinned: `sha256:${'9'.repeat(64)}`,
      current: `sha256:${'5'.repeat(64)}`,
      state: 'changed' as const,
      diff: `--- pdf-grep@sha256:${'9'.repeat(64)}\n+++ pdf-grep@sha256:${'5'.repeat(64)}\n@@ -3,3 +3,3 @@\n \n-Search text inside PDF files with pdfgrep.\n+Search text inside PDF and EPUB files.\n \n`,
    },
  ],
};

export const MACHINE: Machine = { machineId: MACHINE_ID, enrolledAt: AT, status: 'connected', statusSince: AT };

export const SKILL_SCAN: Static<typeof ScanSkillsResult> = {
  rootPath: '/home/me/skills',
  candidates: [
    {
      id: 'pdf-grep',
      name: 'pdf-grep',
      sourcePath: '/home/me/skills/pdf-grep',
      sourceContent: PDF_GREP_V2.sourceContent,
      sourceRevision: SOURCE_REVISION,
    },
  ],
  diagnostics: [
    {
      path: '/home/me/skills/notes',
      code: 'skill_front_matter_missing',
      message: 'SKILL.md has no front matter (a --- block with name and description).',
    },
  ],
};

export const CHANGE_EVENT: Static<typeof ChangeEventSchema> = {
  id: '42',
  type: 'resource.replaced',
  at: AT,
  subject: { kind: 'resource', id: 'pdf-grep', provider: MACHINE_ID },
};

/** Tokens as the service shows them once, shaped like real ones and visibly not. */
export const FAKE_TOKEN = {
  machine: 'arr_machine_EXAMPLEonlyEXAMPLEonlyEXAMPLEonly0000',
  canvas: 'arr_canvas_eyJleGFtcGxlIjp0cnVlfQ.EXAMPLEonlyEXAMPLEonlyEXAMPLEonly00',
  grant: 'arr_grant_eyJleGFtcGxlIjp0cnVlfQ.EXAMPLEonlyEXAMPLEonlyEXAMPLEonly000',
} as const;
