// Renders DOT to SVG with Graphviz compiled to WebAssembly (@viz-js/viz), in one worker thread so a large
// layout never blocks the event loop. The worker (and WebAssembly) starts on the first render; jobs run
// one at a time; the worker holds the process open only while a job is pending.
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = (vizUrl: string) => `
const { parentPort } = require('node:worker_threads');
const viz = import(${JSON.stringify(vizUrl)}).then((m) => m.instance());
parentPort.on('message', async ({ id, dot }) => {
  try {
    parentPort.postMessage({ id, svg: (await viz).renderString(dot, { format: 'svg' }) });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
});
`;

interface Job {
  resolve(svg: string): void;
  reject(err: Error): void;
}

export class SvgRenderer {
  #worker: Worker | undefined;
  #pending = new Map<number, Job>();
  #next = 0;

  render(dot: string): Promise<string> {
    const worker = this.#start();
    const id = ++this.#next;
    return new Promise<string>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, dot });
    });
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#fail(new Error('The SVG renderer was closed.'));
    if (worker) await worker.terminate();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_SOURCE(import.meta.resolve('@viz-js/viz')), { eval: true });
    worker.unref();
    worker.on('message', ({ id, svg, error }: { id: number; svg?: string; error?: string }) => {
      const job = this.#pending.get(id);
      this.#pending.delete(id);
      if (this.#pending.size === 0) worker.unref();
      if (!job) return;
      if (svg !== undefined) job.resolve(svg);
      else job.reject(new Error(`Graphviz could not render the graph: ${error}`));
    });
    const lost = (err: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#fail(err);
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`The SVG renderer stopped (exit code ${code}).`)));
    this.#worker = worker;
    return worker;
  }

  #fail(err: Error): void {
    const jobs = [...this.#pending.values()];
    this.#pending.clear();
    for (const job of jobs) job.reject(err);
  }
}
