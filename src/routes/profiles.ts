// Owner: Agent Profiles. List, create (acp-command and acp-harness), read, change (If-Match or
// expectedRevision) and delete profiles; the profile registry checks placement and secrets, the store
// enforces alias uniqueness and revisions. With HUABU_COMPAT, create and delete answer as upstream does.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { actorOf } from '../credentials/principal.js';
import { protect } from '../http/auth.js';
import { sendEncoded } from '../http/compression.js';
import { CachedBody } from '../registry/catalogue-cache.js';
import { answer, errors, sent } from '../http/openapi.js';
import { PROFILE, MACHINE_ID, AT } from './examples.js';
import {
  AgentProfile,
  IfMatchHeaders,
  MAX_PROFILE_RESOURCE_IDS,
  ProfileCreateBody,
  ProfileDeleted,
  ProfileList,
  ProfileParams,
  ProfilePatchBody,
} from '../schemas/profile.js';
import type { RouteDeps } from './deps.js';

/** Response headers as @fastify/swagger documents them: a map of header name to schema. */
const ETAG_HEADER = {
  headers: {
    etag: Type.String({
      description:
        'The profile\'s current revision as a strong ETag, one per coding: `"<revision>"` as it is, `"<revision>-br"` and `"<revision>-gz"` when the body is sent compressed (`Accept-Encoding`, bodies of 1 KiB and more). Send it back in `If-Match`: each of the three names the revision.',
    }),
  },
};

/**
 * Sends a profile with its revision ETag, in the coding `Accept-Encoding` asks for; the ETag names the
 * coding sent (`sendEncoded`), and `If-Match` accepts it whichever coding it names (`parseIfMatch`).
 */
function sendProfile(request: FastifyRequest, reply: FastifyReply, profile: unknown, etag: string): FastifyReply | Promise<FastifyReply> {
  // The route's response serializer (fast-json-stringify) answers a string.
  const body = reply.serialize(profile) as string;
  return sendEncoded(reply, request.headers, new CachedBody(body, etag), { type: 'application/json; charset=utf-8', etag: 'sent' });
}

export const profileRoutes: FastifyPluginCallbackTypebox<RouteDeps> = (app, { profiles, config }, done) => {
  const compat = config.huabuCompat;
  protect(app, [app.requireOwner], ['ownerToken']);

  app.get(
    '/profiles',
    {
      schema: {
        tags: ['profiles'],
        operationId: 'listProfiles',
        summary: 'List Agent Profiles',
        description:
          "Every profile, sorted by id; `selectableProfileIds`: the ones a new agent can be started from (upstream's meaning; the Huabu UI offers only these); and `agentlet`: the default machine (`DEFAULT_AGENTLET_ID`, else the one enrolled machine) with its status, absent when there is none. Manifest-backed profiles are listed with `resourceIds: []`.",
        response: {
          200: answer(ProfileList, 'The profiles.', {
            profiles: [PROFILE],
            selectableProfileIds: [PROFILE.id],
            agentlet: { id: MACHINE_ID, status: 'connected', online: true, connectedAt: AT },
          }),
        },
      },
    },
    async () => profiles.listWithSelectable(),
  );

  app.post(
    '/profiles',
    {
      schema: {
        tags: ['profiles'],
        operationId: 'createProfile',
        summary: 'Create an Agent Profile',
        description: `Creates an \`acp-command\` or \`acp-harness\` profile; the registry assigns \`id\`, \`schemaVersion\` and \`revision\` (1). Answers 201; with \`HUABU_COMPAT=1\` 200, as upstream does. \`resourceIds\` (at most ${MAX_PROFILE_RESOURCE_IDS}, unique, order kept) may name only registered resources (else 422 \`unresolved_resource_ids\`) whose provider is \`huabu\` or the profile's \`agentletId\` (else 422 \`resource_not_eligible\`); \`details.ids\` lists the offenders. A selection that would show the agent two resources of the same name (ignoring case and surrounding space; required defaults included) is 422 \`capability_diagnostics_failed\` with \`details.diagnostics\`. Aliases are unique ignoring case and look-alike characters (409 \`alias_conflict\`). Alias, path, command, harness ID and every key and string of \`customData\` and \`metadata\` are scanned for secrets.`,
        body: sent(ProfileCreateBody, {
          alias: PROFILE.alias,
          agentletId: MACHINE_ID,
          workingDirPath: PROFILE.workingDirPath,
          launch: PROFILE.launch,
          resourceIds: PROFILE.resourceIds,
        }),
        response: {
          201: {
            ...answer(AgentProfile, 'Created. The `ETag` header carries its current version.', { ...PROFILE, revision: 1 }),
            ...ETAG_HEADER,
          },
          200: {
            ...answer(
              AgentProfile,
              'Created, with `HUABU_COMPAT=1` (upstream answers 200). The `ETag` header carries its current version.',
              { ...PROFILE, revision: 1 },
            ),
            ...ETAG_HEADER,
          },
          ...errors(
            'validation_failed',
            'alias_conflict',
            'invalid_profile_kind',
            'secret_detected',
            'unresolved_resource_ids',
            'resource_not_eligible',
            'capability_diagnostics_failed',
            'invalid_input',
            'unknown_pinned_revision',
            'payload_too_large',
            'storage_unavailable',
          ),
        },
      },
    },
    async (request, reply) => {
      const { profile, etag } = await profiles.create(request.body, actorOf(request.principal!));
      reply.code(compat ? 200 : 201).header('location', `${request.url.split('?')[0]}/${profile.id}`);
      return sendProfile(request, reply, profile, etag);
    },
  );

  app.get(
    '/profiles/:id',
    {
      schema: {
        tags: ['profiles'],
        operationId: 'getProfile',
        summary: 'Read one Agent Profile',
        description: 'The profile and its `ETag`, for a later conditional PATCH or DELETE.',
        params: ProfileParams,
        response: {
          200: { ...answer(AgentProfile, 'The profile.', PROFILE), ...ETAG_HEADER },
          ...errors('validation_failed', 'profile_not_found'),
        },
      },
    },
    async (request, reply) => {
      const { profile, etag } = await profiles.get(request.params.id);
      reply.header('cache-control', 'private, no-cache');
      return sendProfile(request, reply, profile, etag);
    },
  );

  app.patch(
    '/profiles/:id',
    {
      schema: {
        tags: ['profiles'],
        operationId: 'updateProfile',
        summary: 'Change an Agent Profile',
        description:
          "Changes alias, workingDirPath, resourceIds, customData and metadata; fields left out stay. `resourceIds` replaces the whole list and is checked like on create (placement, then same-named resources); `customData` and `metadata` replace the whole object, and `null` removes it. A change that changes something raises `revision` by one. A change made meanwhile by someone else is refused instead of overwritten: with `If-Match` (the ETag from GET) by 412 `precondition_failed`, with `expectedRevision` in the body (upstream's way) by 409 `profile_conflict`; both refuse the same changes, and nothing is written. Manifest-backed profiles cannot be changed here (409 `invalid_profile_kind`).",
        params: ProfileParams,
        headers: IfMatchHeaders,
        body: sent(ProfilePatchBody, { resourceIds: ['web-search'], expectedRevision: 3 }),
        response: {
          200: {
            ...answer(AgentProfile, 'The profile as changed. The `ETag` header carries its new version.', { ...PROFILE, revision: 4 }),
            ...ETAG_HEADER,
          },
          ...errors(
            'validation_failed',
            'profile_not_found',
            'alias_conflict',
            'invalid_profile_kind',
            'profile_conflict',
            'precondition_failed',
            'secret_detected',
            'unresolved_resource_ids',
            'resource_not_eligible',
            'capability_diagnostics_failed',
            'invalid_input',
            'unknown_pinned_revision',
            'payload_too_large',
            'storage_unavailable',
          ),
        },
      },
    },
    async (request, reply) => {
      const { profile, etag } = await profiles.update(
        request.params.id,
        request.body,
        request.headers['if-match'],
        actorOf(request.principal!),
      );
      return sendProfile(request, reply, profile, etag);
    },
  );

  app.delete(
    '/profiles/:id',
    {
      schema: {
        tags: ['profiles'],
        operationId: 'deleteProfile',
        summary: 'Delete an Agent Profile',
        description:
          'Deletes an `acp-command` or `acp-harness` profile: 204 with no body; with `HUABU_COMPAT=1` 200 `{deleted: true}`, as upstream does. `If-Match` is honoured as on PATCH. Manifest-backed profiles belong to their Agent Team manifest (409 `invalid_profile_kind`). Workloads already launched from the profile keep their pinned record.',
        params: ProfileParams,
        headers: IfMatchHeaders,
        response: {
          204: Type.Null({ description: 'Deleted.' }),
          200: answer(ProfileDeleted, "Deleted, with `HUABU_COMPAT=1` (upstream's answer).", { deleted: true }),
          ...errors('validation_failed', 'profile_not_found', 'invalid_profile_kind', 'precondition_failed', 'storage_unavailable'),
        },
      },
    },
    async (request, reply) => {
      await profiles.delete(request.params.id, request.headers['if-match'], actorOf(request.principal!));
      return compat ? reply.code(200).send({ deleted: true as const }) : reply.code(204).send(null);
    },
  );
  done();
};
