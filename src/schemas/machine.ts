// Agentlet machine enrollment records as the API shows them (never a token or its digest).
import Type, { type Static } from 'typebox';
import { MachineId } from './common.js';

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
