// The owner's secret allowlist: findings of the secret scan that are not secrets, each named by its
// fingerprint (the rule and the SHA-256 of the matched text, as a 422 `secret_detected` names it), optionally
// only in one field or file and only on one route. Read from SECRET_ALLOWLIST_FILE and edited through
// `/api/acp/secret-allowlist`.
import Type, { type Static } from 'typebox';
import { VISIBLE_LINE_PATTERN } from '../text/text-rules.js';

/** A secret refusal names at most this many findings (the first, by field and line) and counts the others. */
export const MAX_NAMED_FINDINGS = 20;

const NOT_BLANK_LINE = VISIBLE_LINE_PATTERN;

/** The writes a finding can be allowed on (their audit actions): where the registry and the machine scan. */
const Route = (description: string) =>
  Type.Union(
    [
      Type.Literal('resource.register'),
      Type.Literal('resource.reconcile'),
      Type.Literal('resource.validate'),
      Type.Literal('resource.customize'),
      Type.Literal('receipt.record'),
      Type.Literal('resource.import'),
      Type.Literal('resource.refresh'),
    ],
    { description },
  );

export const SecretFingerprint = Type.String({
  pattern: '^[a-z0-9][a-z0-9-]{0,63}:[0-9a-f]{64}$',
  description: "A finding's fingerprint as a 422 `secret_detected` names it: `<rule>:<SHA-256 hex of the matched text>`.",
});

export const SecretAllowlistEntryBody = Type.Object(
  {
    fingerprint: SecretFingerprint,
    file: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        pattern: NOT_BLANK_LINE,
        description:
          "Only in this field or file: the finding's `field` as the refusal named it (`/instructions`, `/files/references/api.md`), or its end after a `/` (`references/api.md`, `/sourceContent`, which then matches `/resources/3/sourceContent` too).",
      }),
    ),
    route: Type.Optional(Route("Only on this write (the refusal's `details.findings[].route`).")),
    reason: Type.String({
      minLength: 1,
      maxLength: 500,
      pattern: NOT_BLANK_LINE,
      description: 'Why this is no secret, for whoever reads the list later (scanned for secrets itself).',
    }),
  },
  { additionalProperties: false, title: 'SecretAllowlistEntryBody' },
);
export type SecretAllowlistEntryBody = Static<typeof SecretAllowlistEntryBody>;

export const SecretAllowlistEntry = Type.Object(
  {
    ...SecretAllowlistEntryBody.properties,
    addedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the owner added it through the API.' })),
  },
  { additionalProperties: false, title: 'SecretAllowlistEntry' },
);
export type SecretAllowlistEntry = Static<typeof SecretAllowlistEntry>;

export const SecretAllowlistFile = Type.Array(SecretAllowlistEntry, { maxItems: 10_000 });

export const SecretAllowlistList = Type.Object(
  { entries: Type.Array(SecretAllowlistEntry, { description: 'Every entry, in the order added.' }) },
  { additionalProperties: false, title: 'SecretAllowlist' },
);

export const SecretAllowlistQuery = Type.Object(
  {
    fingerprint: SecretFingerprint,
    file: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: "The entry's `file`, when it has one." })),
    route: Type.Optional(Route("The entry's `route`, when it has one.")),
  },
  { additionalProperties: false },
);
export type SecretAllowlistQuery = Static<typeof SecretAllowlistQuery>;
