// The few parts of autocannon 9 the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      overallRate?: number;
      requests?: Request[];
    }
    interface Histogram {
      p50: number;
      p99: number;
      average: number;
    }
    interface Result {
      duration: number;
      errors: number;
      timeouts: number;
      latency: Histogram;
      requests: Histogram;
      statusCodeStats?: Record<string, { count: number }>;
    }
    interface Instance extends EventEmitter {
      stop(): void;
    }
    function track(instance: Instance, options?: Record<string, unknown>): void;
  }
  function autocannon(options: autocannon.Options, callback: (err: unknown, result: autocannon.Result) => void): autocannon.Instance;
  export default autocannon;
}
