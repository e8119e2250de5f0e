// A failure a job reports to the registry as `{ok: false, error: {code, message}}`.
export class JobError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'JobError';
  }
}
