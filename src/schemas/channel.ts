// The machine channel's wire shapes: a job as the channel carries it, the answer a machine posts, and the
// owner's request to run a job on a machine.
import { MAX_NAMED_FINDINGS, SecretFingerprint } from './secret-allowlist.js';
import { SINGLE_LINE_PATTERN } from '../text/text-rules.js';
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

/** A secret finding of a machine's scan, as its `secret_detected` failure names it (never the value). */
export const JobSecretFinding = Type.Object(
  {
    field: Type.String({
      minLength: 1,
      maxLength: 4096,
      pattern: SINGLE_LINE_PATTERN,
      description:
        'Where: `/files/<path within the skill>`, or in a scanned candidate its `/sourceContent` (`SKILL.md`) or `/name` (scanned for secrets itself).',
    }),
    line: Type.Integer({ minimum: 1, description: '1-based line of the file.' }),
    rule: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9][a-z0-9-]*$' }),
    fingerprint: SecretFingerprint,
    route: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z.-]+$' })),
  },
  { additionalProperties: false },
);
export type JobSecretFinding = Static<typeof JobSecretFinding>;

export const JobErrorAnswer = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9_]+$', description: 'Stable snake_case code of the failure.' }),
    message: Type.String({ minLength: 1, maxLength: 2000, description: 'What went wrong, for a person (scanned for secrets).' }),
    findings: Type.Optional(
      Type.Array(JobSecretFinding, {
        maxItems: MAX_NAMED_FINDINGS,
        description: `\`secret_detected\`: where the secrets are (the first ${MAX_NAMED_FINDINGS}; the message counts the others), never what they are.`,
      }),
    ),
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
