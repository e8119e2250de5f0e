// The machine channel over HTTP: a machine holds `GET /providers/:machineId/channel` open (Server-Sent
// Events carrying its jobs) and posts each answer to `/providers/:machineId/jobs/:jobId`; the owner runs a
// job on a connected machine with `POST /machines/:machineId/jobs`. The channel itself is
// src/channel/machine-channels.ts; this file only speaks HTTP.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { HEARTBEAT_MS, type ChannelSink, type MachineChannels } from '../channel/machine-channels.js';
import { AppError } from '../errors.js';
import { protect } from '../http/auth.js';
import { answer, errors, sent } from '../http/openapi.js';
import { MACHINE_ID } from './examples.js';
import type { MachineRegistry } from '../machines/machine-registry.js';
import { nestedDeeperThan } from '../invocation/outbound.js';
import { JobAnswerBody, JobId, MAX_JOB_RESULT_DEPTH, RunJobBody, RunJobResult } from '../schemas/channel.js';
import { HOST_PROVIDER, MachineId } from '../schemas/common.js';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import { withholdSecrets } from '../secrets/withhold.js';

export interface ChannelRouteDeps {
  channels: MachineChannels;
  machines: MachineRegistry;
  scanner: SecretScanner;
}

const MachineParams = Type.Object({ machineId: MachineId });

/** The machine's side, prefix `/providers`: its own channel and its own jobs only. */
export const machineChannelRoutes: FastifyPluginCallbackTypebox<ChannelRouteDeps> = (app, { channels, machines, scanner }, done) => {
  protect(app, [app.requireProvider], ['providerToken']);
  app.addHook('onRequest', (request, _reply, done) => {
    const principal = request.principal;
    const { machineId } = request.params as { machineId?: string };
    if (principal?.kind !== 'provider' || principal.provider === HOST_PROVIDER || principal.provider !== machineId) {
      throw new AppError('forbidden', 'A machine may open only its own channel and answer only its own jobs.');
    }
    done();
  });

  app.get(
    '/:machineId/channel',
    {
      schema: {
        tags: ['machines'],
        operationId: 'openMachineChannel',
        summary: "Hold the machine's channel",
        description: `Server-Sent Events (\`text/event-stream\`) for \`agentlet-resources serve\`. First \`event: ready\` (\`data: {machineId, heartbeatSeconds}\`), then one \`event: job\` per job (\`id:\` and \`data:\` \`{jobId, type, payload}\`); a comment line every ${HEARTBEAT_MS / 1000} s. A machine holds one channel: a newer connection replaces this one. Revoking or rotating the machine's token closes it at once.`,
        params: MachineParams,
        response: {
          200: {
            description: 'The stream of jobs.',
            content: { 'text/event-stream': { schema: Type.String({ description: 'Server-Sent Events.' }) } },
          },
          ...errors('validation_failed', 'unavailable'),
        },
      },
    },
    async (request, reply) => {
      const { machineId } = request.params;
      // The token the request was admitted with (the auth hook parsed the same header the same way).
      const token = /^Bearer[ ]+(\S+)[ ]*$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
      // Re-checked on every heartbeat: a revoke or rotation through another replica ends this channel too.
      const stillValid = async () => (await machines.authenticate(token)) === machineId;
      const raw = reply.raw;
      reply.hijack();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        connection: 'keep-alive',
      });
      let ended = false;
      const sink: ChannelSink = {
        job: (job) => raw.write(`event: job\nid: ${job.jobId}\ndata: ${JSON.stringify(job)}\n\n`),
        comment: (text) => raw.write(`: ${text}\n\n`),
        end: () => {
          if (ended) return;
          ended = true;
          raw.end();
        },
      };
      let close: () => void;
      try {
        close = channels.open(machineId, sink, stillValid);
      } catch (err) {
        request.log.warn({ machineId, err }, 'machine channel refused');
        return;
      }
      raw.write(`event: ready\ndata: ${JSON.stringify({ machineId, heartbeatSeconds: HEARTBEAT_MS / 1000 })}\n\n`);
      request.log.info({ machineId }, 'machine channel opened');
      raw.once('close', () => {
        ended = true;
        close();
        request.log.info({ machineId }, 'machine channel closed');
      });
    },
  );

  app.post(
    '/:machineId/jobs/:jobId',
    {
      // The owner waits for this answer: a machine past its events per minute still sends it.
      config: { writesNoEvents: true },
      schema: {
        tags: ['machines'],
        operationId: 'answerMachineJob',
        summary: 'Answer one job',
        description:
          "The machine's answer to a job its channel carried: `{ok: true, result}` or `{ok: false, error: {code, message}}`. 404 `job_not_found` when no such job of this machine is waiting (unknown, answered, timed out, or sent over a channel that has closed): the answer is dropped.",
        params: Type.Object({ machineId: MachineId, jobId: JobId }),
        body: JobAnswerBody,
        response: { 204: Type.Null({ description: 'Delivered.' }), ...errors('validation_failed', 'job_not_found') },
      },
    },
    async (request, reply) => {
      const { machineId, jobId } = request.params;
      let answer = request.body;
      // A result too deep to send on is refused here; its job fails at once rather than waiting for its timeout.
      if (answer.ok && nestedDeeperThan(answer.result, MAX_JOB_RESULT_DEPTH)) {
        channels.answer(machineId, jobId, {
          ok: false,
          error: {
            code: 'answer_refused',
            message: `The machine's result was nested more than ${MAX_JOB_RESULT_DEPTH} levels deep; the registry refused it.`,
          },
        });
        throw new AppError('validation_failed', `body/result is nested more than ${MAX_JOB_RESULT_DEPTH} levels deep.`, {
          field: '/result',
          limit: MAX_JOB_RESULT_DEPTH,
        });
      }
      // The machine's own words reach the owner: a secret in them is withheld, never passed on.
      if (!answer.ok && (await scanner.scan([['/error/message', answer.error.message]])).length > 0) {
        answer = {
          ok: false,
          error: {
            code: answer.error.code,
            message: 'The machine described the failure with what looks like a secret; the message was withheld.',
            ...(answer.error.findings ? { findings: answer.error.findings } : {}),
          },
        };
      }
      // A finding's fingerprint and rule are checked by the schema; its field is a file path, which is scanned.
      if (!answer.ok && answer.error.findings?.length) {
        const paths = answer.error.findings.map((f, i): [string, string] => [`/error/findings/${i}/field`, f.field]);
        if ((await scanner.scan(paths)).length > 0) {
          const { findings: _withheld, ...rest } = answer.error;
          answer = { ok: false, error: rest };
        }
      }
      if (!channels.answer(machineId, jobId, answer)) {
        throw new AppError('job_not_found', `No job ${jobId} of machine ${machineId} is waiting for an answer; it was dropped.`, {
          machineId,
          jobId,
        });
      }
      return reply.code(204).send(null);
    },
  );
  done();
};

/** The owner's side, prefix `/machines`: run one job on a connected machine and wait for its answer. */
export const machineJobRoutes: FastifyPluginCallbackTypebox<ChannelRouteDeps> = (app, { channels, scanner }, done) => {
  protect(app, [app.requireOwner], ['ownerToken']);

  app.post(
    '/:machineId/jobs',
    {
      schema: {
        tags: ['machines'],
        operationId: 'runMachineJob',
        summary: 'Run a job on a connected machine',
        description:
          "Sends the job over the machine's channel and answers with the machine's result; any string in it (a key too) that looks like a secret is withheld (replaced by a fixed text). 503 `agentlet_unavailable` when the machine holds no channel (or loses it before answering), 503 `agentlet_busy` when too many of its jobs are in flight, 504 `agentlet_timeout` when it does not answer within `AGENTLET_JOB_TIMEOUT_MS`, 502 `agentlet_job_failed` when it answers with an error (`details.agentletCode`).",
        params: MachineParams,
        body: sent(RunJobBody, { type: 'ping' }),
        response: {
          200: answer(
            RunJobResult,
            "The machine's answer.",
            { machineId: MACHINE_ID, jobId: '4f0c2a9e-6b1d-4c3a-9e2f-7a8b5c6d1e0f', type: 'ping', result: { pong: true } },
            {
              machineId: MACHINE_ID,
              jobId: '8d3e1f2a-5c4b-4a9e-b7d6-0e1f2a3b4c5d',
              type: 'sync',
              result: { dryRun: false, created: [], replaced: ['pdf-grep'], withdrawn: [], unchanged: [] },
            },
          ),
          ...errors('validation_failed', 'agentlet_job_failed', 'agentlet_unavailable', 'agentlet_busy', 'agentlet_timeout'),
        },
      },
    },
    async (request) => {
      const { machineId } = request.params;
      const { type } = request.body;
      const { jobId, answer } = await channels.run(machineId, type, {});
      if (!answer.ok) {
        throw new AppError('agentlet_job_failed', `Agentlet ${machineId} could not run the ${type} job: ${answer.error.message}`, {
          machineId,
          jobId,
          agentletCode: answer.error.code,
        });
      }
      // The machine's words reach the owner scanned: a string that looks like a secret is withheld (src/secrets/withhold.ts).
      const { value: result } = await withholdSecrets(scanner, answer.result ?? null);
      return { machineId, jobId, type, result };
    },
  );
  done();
};
