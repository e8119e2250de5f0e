// Skill management over HTTP (owner): scan a folder on a machine, import a skill from it, refresh it from
// its source, remove it, with upstream's paths and strict bodies. The work is src/registry/skill-management.ts;
// this file only speaks HTTP.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { MachineChannels } from '../channel/machine-channels.js';
import { actorOf } from '../credentials/principal.js';
import { protect } from '../http/auth.js';
import { answer, errors, sent } from '../http/openapi.js';
import { PDF_GREP_V2, SKILL_SCAN, SOURCE_REVISION } from './examples.js';
import { SkillManagement } from '../registry/skill-management.js';
import { ResourceId } from '../schemas/common.js';
import { ResourceMutationResult } from '../schemas/resource.js';
import {
  ImportSkillBody,
  RefreshSkillBody,
  ScanSkillsBody,
  ScanSkillsResult,
  SkillMachineQuery,
  SkillRemovalResult,
} from '../schemas/skill.js';
import type { RouteDeps } from './deps.js';

const MACHINE_ERRORS = ['agentlet_unavailable', 'agentlet_busy', 'agentlet_timeout', 'agentlet_job_failed'] as const;
const MACHINE_NOTE =
  'The machine is `?agentletId=`, else `DEFAULT_AGENTLET_ID`, else the only enrolled machine; it must hold its channel (`agentlet-resources serve`): else 503 `agentlet_unavailable`, 504 `agentlet_timeout` when it does not answer in time.';
const IdParams = Type.Object({ id: ResourceId });

export const skillRoutes: FastifyPluginCallbackTypebox<RouteDeps & { channels: MachineChannels }> = (app, deps, done) => {
  protect(app, [app.requireOwner], ['ownerToken']);
  const skills = new SkillManagement({
    channels: deps.channels,
    registry: deps.registry,
    scanner: deps.scanner,
    allowlist: () => deps.secretAllowlist.entries(),
    audit: deps.audit,
    defaultMachineId: () => deps.profiles.defaultMachineId(),
  });

  app.post(
    '/resources/import/scan',
    {
      schema: {
        tags: ['skills'],
        operationId: 'scanSkills',
        summary: 'Scan a folder on a machine for skills',
        description: `Lists the skills in \`rootPath\` on the machine: the folder (or a \`.zip\`/\`.skill\` archive) itself when it is a skill, else each direct sub-folder holding \`SKILL.md\` and each such archive in it. A candidate's \`sourceRevision\` is what \`POST /resources/import\` expects back; a folder that cannot be imported (no front matter \`name\`/\`description\`, a symbolic link leading out of it, too large, a secret in \`SKILL.md\`) is a diagnostic. The diagnostics also show the machine's own resource root: each receipt it cannot publish and each folder in \`skills/\` no receipt names. The machine's words are scanned: a root path or diagnostic text that looks like a secret is withheld (replaced by a fixed text), and a candidate with one in any field is a diagnostic instead. Nothing is written. ${MACHINE_NOTE} Audited as \`resource.import.scan\`.`,
        querystring: SkillMachineQuery,
        body: sent(ScanSkillsBody, { rootPath: '/home/me/skills' }),
        response: {
          200: answer(ScanSkillsResult, 'The candidates and diagnostics.', SKILL_SCAN),
          ...errors('validation_failed', 'invalid_input', ...MACHINE_ERRORS),
        },
      },
    },
    async (request) => skills.scan(request.query.agentletId, request.body.rootPath, actorOf(request.principal!)),
  );

  app.post(
    '/resources/import',
    {
      schema: {
        tags: ['skills'],
        operationId: 'importSkill',
        summary: 'Import a skill onto a machine',
        description: `Copies the skill folder \`sourcePath\` into the machine's resource root (\`skills/<id>/\`) with its receipt, publishes it, and applies the owner's \`displayName\` and \`userContent\`: answers \`{resource}\`, the machine's record v2, now listed in \`manageableResourceIds\`. 409 \`source_changed\` when the folder no longer has \`expectedRevision\` (scan again); 409 \`resource_conflict\` when the ID is held by any record but a skill the owner imported onto this machine: importing that one again replaces it (the folder becomes the new source whole, guarded by \`expectedRevision\`; the owner's fields are the new import's); 422 \`secret_detected\` when a file (or the owner's text) looks like a secret: nothing is copied; 409 \`record_quota_exceeded\` when a new record would not fit the machine's record quota: nothing is copied. ${MACHINE_NOTE} Audited as \`resource.import\`.`,
        querystring: SkillMachineQuery,
        body: sent(ImportSkillBody, { id: 'pdf-grep', sourcePath: '/home/me/skills/pdf-grep', expectedRevision: SOURCE_REVISION }),
        response: {
          200: answer(ResourceMutationResult, 'The imported record, as record v2, in `resource`.', { resource: PDF_GREP_V2 }),
          ...errors(
            'validation_failed',
            'invalid_input',
            'resource_conflict',
            'record_quota_exceeded',
            'source_changed',
            'secret_detected',
            'storage_unavailable',
            ...MACHINE_ERRORS,
          ),
        },
      },
    },
    async (request) => ({ resource: await skills.import(request.query.agentletId, request.body, actorOf(request.principal!)) }),
  );

  app.post(
    '/resources/:id/refresh/scan',
    {
      schema: {
        tags: ['skills'],
        operationId: 'scanSkillRefresh',
        summary: "Scan an imported skill's source again",
        description: `The scan of the folder the skill was imported from (one candidate, or a diagnostic): its \`sourceRevision\` is what \`POST /resources/:id/refresh\` expects. 404 when no record has the ID; 409 \`resource_not_manageable\` when it is not a skill the owner imported onto that machine. ${MACHINE_NOTE} Audited as \`resource.refresh.scan\`.`,
        params: IdParams,
        querystring: SkillMachineQuery,
        response: {
          200: answer(ScanSkillsResult, 'The scan of the source.', {
            rootPath: '/home/me/skills/pdf-grep',
            candidates: SKILL_SCAN.candidates,
            diagnostics: [],
          }),
          ...errors(
            'validation_failed',
            'resource_not_found',
            'resource_not_manageable',
            'skill_not_found',
            'invalid_input',
            ...MACHINE_ERRORS,
          ),
        },
      },
    },
    async (request) => skills.refreshScan(request.query.agentletId, request.params.id, actorOf(request.principal!)),
  );

  app.post(
    '/resources/:id/refresh',
    {
      schema: {
        tags: ['skills'],
        operationId: 'refreshSkill',
        summary: 'Refresh an imported skill from its source',
        description: `Copies the source folder again over the machine's copy and publishes it; the owner's \`displayName\` and \`userContent\` are kept. 409 \`source_changed\` when the folder no longer has \`expectedRevision\`; 422 \`secret_detected\` (nothing copied). 404 / 409 \`resource_not_manageable\` as for the refresh scan. ${MACHINE_NOTE} Audited as \`resource.refresh\`.`,
        params: IdParams,
        querystring: SkillMachineQuery,
        body: sent(RefreshSkillBody, { expectedRevision: SOURCE_REVISION }),
        response: {
          200: answer(ResourceMutationResult, 'The refreshed record, as record v2, in `resource`.', { resource: PDF_GREP_V2 }),
          ...errors(
            'validation_failed',
            'resource_not_found',
            'resource_not_manageable',
            'skill_not_found',
            'source_changed',
            'secret_detected',
            'invalid_input',
            'storage_unavailable',
            ...MACHINE_ERRORS,
          ),
        },
      },
    },
    async (request) => ({
      resource: await skills.refresh(
        request.query.agentletId,
        request.params.id,
        request.body.expectedRevision,
        actorOf(request.principal!),
      ),
    }),
  );

  app.delete(
    '/resources/:id',
    {
      schema: {
        tags: ['skills'],
        operationId: 'removeSkill',
        summary: 'Remove an imported skill',
        description: `Removes the skill's folder and receipt from the machine and withdraws its record: \`{removed: true}\`. Only skills the owner imported are removed here: 409 \`resource_not_manageable\` for any other record (its publisher withdraws it). Without a record, what the machine still holds under the ID is cleared: an imported skill's receipt and folder, or a folder in \`skills/\` that no receipt names (a scan lists those as \`skill_orphaned\`): 200; 404 when there is nothing, or the machine is not connected; 409 \`resource_conflict\` when another receipt names that folder. ${MACHINE_NOTE} Audited as \`resource.remove\`.`,
        params: IdParams,
        querystring: SkillMachineQuery,
        response: {
          200: answer(SkillRemovalResult, 'Removed.', { removed: true }),
          ...errors(
            'validation_failed',
            'resource_not_found',
            'resource_not_manageable',
            'resource_conflict',
            'storage_unavailable',
            ...MACHINE_ERRORS,
          ),
        },
      },
    },
    async (request) => ({ removed: await skills.remove(request.query.agentletId, request.params.id, actorOf(request.principal!)) }),
  );
  done();
};
