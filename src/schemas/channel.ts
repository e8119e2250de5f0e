// The machine channel's wire shapes: a job as the channel carries it, the answer a machine posts, and the
// owner's request to run a job on a machine.
import Type, { type Static } from 'typebox';

export const JobId = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9-]+$',
  description: 'The job, as the channel named it.',
});

export const ChannelJob = Type.Object(
  {
    jobId: JobId,
    type: Type.String({ description: 'What to do (`ping`, `sync`).' }),
    payload: Type.Unknown({ description: "The job's input; `{}` for `ping` and `sync`." }),
  },
  { additionalProperties: false, title: 'ChannelJob', description: 'One `event: job` on the channel (its `data:` line).' },
);
export type ChannelJob = Static<typeof ChannelJob>;

export const JobErrorAnswer = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9_]+$', description: 'Stable snake_case code of the failure.' }),
    message: Type.String({ minLength: 1, maxLength: 2000, description: 'What went wrong, for a person (scanned for secrets).' }),
  },
  { additionalProperties: false },
);

/** Arrays and objects nested deeper than this in a job's result are refused (400): sending it on would overflow the stack. */
export const MAX_JOB_RESULT_DEPTH = 64;

export const JobAnswerBody = Type.Union(
  [
    Type.Object(
      {
        ok: Type.Literal(true),
        result: Type.Optional(
          Type.Unknown({
            description: `The job's result: any JSON nested at most ${MAX_JOB_RESULT_DEPTH} levels of arrays and objects deep (400 \`validation_failed\` otherwise, and the job fails).`,
          }),
        ),
      },
      { additionalProperties: false },
    ),
    Type.Object({ ok: Type.Literal(false), error: JobErrorAnswer }, { additionalProperties: false }),
  ],
  { title: 'JobAnswer', description: 'The answer to one job: `{ok: true, result}` or `{ok: false, error: {code, message}}`.' },
);
export type JobAnswerBody = Static<typeof JobAnswerBody>;

export const RunJobBody = Type.Object(
  {
    type: Type.Union([Type.Literal('ping'), Type.Literal('sync')], {
      description: '`ping`: the machine answers at once; `sync`: it publishes its resource root now.',
    }),
  },
  { additionalProperties: false },
);

export const RunJobResult = Type.Object(
  {
    machineId: Type.String(),
    jobId: JobId,
    type: Type.String(),
    result: Type.Unknown({
      description:
        "What the machine answered (`ping`: `{pong: true}`; `sync`: the reconcile's `{created, replaced, withdrawn, unchanged}`).",
    }),
  },
  { additionalProperties: false, title: 'RunJobResult' },
);
