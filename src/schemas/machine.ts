// Agentlet machine enrollment records as the API shows them (never a token or its digest).
import Type, { type Static } from 'typebox';
import { MachineId, ResourceId, SINGLE_LINE_PATTERN } from './common.js';

/** At most this many problems in one machine's report (the receipts past it are summed up in the last one). */
export const MAX_MACHINE_PROBLEMS = 64;
/** Longest problem message. */
export const MAX_PROBLEM_MESSAGE = 1000;

/** One receipt the machine's Agentlet could not publish, as it reports it with its reconcile. */
export const MachineProblem = Type.Object(
  {
    receipt: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: SINGLE_LINE_PATTERN,
      description: 'The receipt file, relative to the resource root (`receipts/<id>.json`); `receipts` for the folder as a whole.',
    }),
    id: Type.Optional({ ...ResourceId, description: 'The resource ID the receipt is named for, when its file name gives one.' }),
    code: Type.String({
      pattern: '^[a-z][a-z0-9_]{0,63}$',
      description:
        '`entrypoint_missing` (the files the receipt names are gone, e.g. a deleted skill folder), `receipt_invalid` (anything else), `too_many_receipts`; an Agentlet may send others.',
    }),
    message: Type.String({
      minLength: 1,
      maxLength: MAX_PROBLEM_MESSAGE,
      pattern: SINGLE_LINE_PATTERN,
      description: 'What is wrong, for a person.',
    }),
  },
  { additionalProperties: false, title: 'MachineProblem' },
);
export type MachineProblem = Static<typeof MachineProblem>;

export const MachineProblems = Type.Array(MachineProblem, { maxItems: MAX_MACHINE_PROBLEMS });

export const Machine = Type.Object(
  {
    machineId: MachineId,
    enrolledAt: Type.String({ format: 'date-time', description: 'When the current credential was issued.' }),
    revokedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the credential was revoked.' })),
    status: Type.Union([Type.Literal('connected'), Type.Literal('disconnected')], {
      description:
        '`connected` while the machine holds its channel (`agentlet-resources serve` runs) on this replica; `disconnected` otherwise.',
    }),
    statusSince: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'When `status` last changed; absent when the machine has not held a channel since this replica started.',
      }),
    ),
    problems: Type.Optional({
      ...MachineProblems,
      description:
        "The receipts the machine's Agentlet could not publish, as it last reported them with its reconcile to this replica (their records are withdrawn until they are fixed); absent when it reported none.",
    }),
  },
  { additionalProperties: false, title: 'Machine' },
);
export type Machine = Static<typeof Machine>;

export const EnrollBody = Type.Object({ machineId: MachineId }, { additionalProperties: false });

export const EnrollResult = Type.Object(
  {
    machineId: MachineId,
    token: Type.String({ description: 'The machine token. Shown only in this response; store it on the machine.' }),
  },
  { additionalProperties: false },
);

export const MachineList = Type.Object({ machines: Type.Array(Machine) }, { additionalProperties: false });
