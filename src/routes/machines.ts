// Owner: enroll Agentlet machines (the token is shown once), list them, rotate their tokens, revoke them
// (their records are withdrawn).
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { actorOf } from '../credentials/principal.js';
import { protect } from '../http/auth.js';
import { answer, errors, sent } from '../http/openapi.js';
import { MACHINE, FAKE_TOKEN, MACHINE_ID, AT } from './examples.js';
import { MachineId } from '../schemas/common.js';
import { EnrollBody, EnrollResult, MachineList } from '../schemas/machine.js';
import type { RouteDeps } from './deps.js';

export const machineRoutes: FastifyPluginCallbackTypebox<RouteDeps> = (app, { machines }, done) => {
  protect(app, [app.requireOwner], ['ownerToken']);

  app.post(
    '/machines',
    {
      schema: {
        tags: ['machines'],
        operationId: 'enrollMachine',
        summary: 'Enroll a machine',
        description:
          'Issues the machine token. This response is the only time the token is shown; the registry keeps only its digest. A revoked machine may be enrolled again (new token).',
        body: sent(EnrollBody, { machineId: MACHINE_ID }),
        response: {
          201: answer(EnrollResult, 'Enrolled.', { machineId: MACHINE_ID, token: FAKE_TOKEN.machine }),
          ...errors('validation_failed', 'machine_exists'),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return reply.code(201).send(await machines.enroll(request.body.machineId, actorOf(request.principal!)));
    },
  );

  app.get(
    '/machines',
    {
      schema: {
        tags: ['machines'],
        operationId: 'listMachines',
        summary: 'List machines',
        description: 'Enrolled and revoked machines, never their tokens.',
        response: {
          200: answer(MachineList, 'The machines, sorted by ID.', {
            machines: [
              MACHINE,
              {
                machineId: 'agentlet-9b2c',
                enrolledAt: AT,
                status: 'disconnected',
                problems: [
                  { receipt: 'receipts/notes.json', id: 'notes', code: 'entrypoint_missing', message: 'skills/notes/SKILL.md is gone.' },
                ],
              },
            ],
          }),
        },
      },
    },
    async () => ({ machines: await machines.list() }),
  );

  app.delete(
    '/machines/:machineId',
    {
      schema: {
        tags: ['machines'],
        operationId: 'revokeMachine',
        summary: 'Revoke a machine',
        description:
          "Revokes the machine's credential and every canvas token minted for it, closes its channel, and withdraws all its records (each withdrawal audited and announced as `resource.withdrawn`): their IDs are free again. A revoked machine may be enrolled again with a new token.",
        params: Type.Object({ machineId: MachineId }),
        response: { 204: Type.Null({ description: 'Revoked.' }), ...errors('validation_failed', 'machine_not_found') },
      },
    },
    async (request, reply) => {
      await machines.revoke(request.params.machineId, actorOf(request.principal!));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/machines/:machineId/rotate',
    {
      schema: {
        tags: ['machines'],
        operationId: 'rotateMachineToken',
        summary: "Rotate a machine's token",
        description:
          "Issues a new machine token and refuses the old one from this moment. The enrollment stays: the machine's records, its `enrolledAt` and the canvas tokens minted for it are kept. This response is the only time the new token is shown.",
        params: Type.Object({ machineId: MachineId }),
        response: {
          200: answer(EnrollResult, 'Rotated.', { machineId: MACHINE_ID, token: FAKE_TOKEN.machine }),
          ...errors('validation_failed', 'machine_not_found'),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return machines.rotate(request.params.machineId, actorOf(request.principal!));
    },
  );
  done();
};
