// Renders DOT to SVG with Graphviz compiled to WebAssembly (@viz-js/viz), each render in its own worker
// thread so a large layout never blocks the event loop and can be stopped: a render that passes its time
// limit, or whose callers all went away (AbortSignal), has its worker terminated. Renders run one at a
// time (the layout is CPU-bound; two would only share the cores with the event loop).
import { Worker } from 'node:worker_threads';
import { AppError } from '../errors.js';

const WORKER_SOURCE = (vizUrl: string) => `
const { parentPort, workerData } = require('node:worker_threads');
import(${JSON.stringify(vizUrl)})
  .then((m) => m.instance())
  .then((viz) => parentPort.postMessage({ svg: viz.renderString(workerData.dot, { format: 'svg' }) }))
  .catch((err) => parentPort.postMessage({ error: String((err && err.message) || err) }));
`;

/** How long one layout may take before it is stopped (413: narrow the graph). */
export const SVG_RENDER_TIMEOUT_MS = 20_000;

export interface RenderOptions {
  /** Aborted when nobody waits for the result any more (the client disconnected). */
  signal?: AbortSignal;
  timeoutMs?: number;
}

export class SvgRenderer {
  #tail: Promise<unknown> = Promise.resolve();
  #running = new Set<Worker>();
  #closed = false;

  render(dot: string, options: RenderOptions = {}): Promise<string> {
    const run = this.#tail.then(() => this.#run(dot, options));
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** Workers rendering right now (0 when idle). */
  get running(): number {
    return this.#running.size;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#running].map((w) => w.terminate()));
  }

  #run(dot: string, { signal, timeoutMs = SVG_RENDER_TIMEOUT_MS }: RenderOptions): Promise<string> {
    if (this.#closed) return Promise.reject(new Error('The SVG renderer was closed.'));
    if (signal?.aborted) return Promise.reject(abortError());
    return new Promise<string>((resolve, reject) => {
      const worker = new Worker(WORKER_SOURCE(import.meta.resolve('@viz-js/viz')), { eval: true, workerData: { dot } });
      this.#running.add(worker);
      let settled = false;
      const finish = (err: Error | undefined, svg?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#running.delete(worker);
        void worker.terminate();
        if (err) reject(err);
        else resolve(svg!);
      };
      const timer = setTimeout(
        () =>
          finish(
            new AppError(
              'payload_too_large',
              `The graph took more than ${timeoutMs / 1000} s to lay out; narrow it with ?kind= or take ?format=dot.`,
              {
                timeoutMs,
              },
            ),
          ),
        timeoutMs,
      );
      const onAbort = () => finish(abortError());
      signal?.addEventListener('abort', onAbort, { once: true });
      worker.on('message', ({ svg, error }: { svg?: string; error?: string }) =>
        finish(svg !== undefined ? undefined : new Error(`Graphviz could not render the graph: ${error}`), svg),
      );
      worker.on('error', (err) => finish(err));
      worker.on('exit', (code) => finish(new Error(`The SVG renderer stopped (exit code ${code}).`)));
    });
  }
}

function abortError(): Error {
  const err = new Error('The render was cancelled: nobody waits for it any more.');
  err.name = 'AbortError';
  return err;
}
