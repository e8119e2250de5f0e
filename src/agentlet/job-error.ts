// A failure a job reports to the registry as `{ok: false, error: {code, message, findings?}}`.
import type { SecretFinding } from '../secrets/secret-scanner.js';

export class JobError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** `secret_detected`: where the secrets are (field, line, rule, fingerprint), never what they are. */
    readonly findings?: readonly SecretFinding[],
  ) {
    super(message);
    this.name = 'JobError';
  }
}
