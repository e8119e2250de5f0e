// The jobs `agentlet-resources serve` runs for the registry. Each job type is one registration: a handler
// that takes the job's payload and the daemon's context and returns the result (or throws a JobError).
import type { JobContext } from './job-context.js';
import { MAX_NAMED_FINDINGS, type SecretFinding } from '../secrets/secret-scanner.js';
import { JobError } from './job-error.js';
import { scanJob, importJob, removeJob } from './skill-jobs.js';

export { JobError };

export type { JobContext };

export type JobHandler = (payload: unknown, context: JobContext) => Promise<unknown>;

export class JobRegistry {
  readonly #handlers = new Map<string, JobHandler>();

  register(type: string, handler: JobHandler): this {
    if (this.#handlers.has(type)) throw new Error(`job type ${type} is registered twice`);
    this.#handlers.set(type, handler);
    return this;
  }

  types(): string[] {
    return [...this.#handlers.keys()].sort();
  }

  /** Runs the job; never throws: the answer is what the registry receives. */
  async run(
    type: string,
    payload: unknown,
    context: JobContext,
  ): Promise<{ ok: true; result: unknown } | { ok: false; error: { code: string; message: string; findings?: SecretFinding[] } }> {
    const handler = this.#handlers.get(type);
    if (!handler)
      return {
        ok: false,
        error: { code: 'unknown_job_type', message: `This Agentlet does not run ${type} jobs (it runs: ${this.types().join(', ')}).` },
      };
    try {
      return { ok: true, result: await handler(payload, context) };
    } catch (err) {
      // The registry takes a message of at most 2000 characters.
      if (err instanceof JobError) {
        const findings = err.findings?.slice(0, MAX_NAMED_FINDINGS);
        return {
          ok: false,
          error: { code: err.code, message: err.message.slice(0, 2000), ...(findings?.length ? { findings: [...findings] } : {}) },
        };
      }
      return { ok: false, error: { code: 'job_failed', message: (err as Error).message || 'the job failed' } };
    }
  }
}

/** The jobs this Agentlet runs. */
export const JOBS = new JobRegistry()
  .register('ping', () => Promise.resolve({ pong: true }))
  .register('sync', async (_payload, context) => context.publish())
  .register('skill.scan', scanJob)
  .register('skill.import', importJob)
  .register('skill.remove', removeJob);
