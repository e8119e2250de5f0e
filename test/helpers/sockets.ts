// Real sockets for the tests: an app or a plain server listening on a loopback port the system picks, and a
// port nothing listens on (for a child process told its port before it starts, or a connection refused).
import type net from 'node:net';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';

/**
 * Starts a Fastify app, or a node:net / node:http server, on 127.0.0.1 at a port the system picks; returns
 * its origin, `http://127.0.0.1:PORT`.
 */
export async function listen(server: FastifyInstance | net.Server): Promise<string> {
  let address: string | net.AddressInfo | null;
  if ('inject' in server) {
    await server.listen({ host: '127.0.0.1', port: 0 });
    address = server.server.address();
  } else {
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
    address = server.address();
  }
  if (address === null || typeof address === 'string') throw new Error('not listening on a TCP socket');
  return `http://127.0.0.1:${address.port}`;
}

/** A loopback port that was free a moment ago (bound, read and released): nothing answers there. */
export async function freePort(): Promise<number> {
  const server = createServer();
  const { port } = new URL(await listen(server));
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return Number(port);
}

/**
 * Runs `work` while asking `origin`'s `/healthz` again and again (20 ms apart), and gives back its result and
 * the longest wait between two answers: a blocked event loop shows as one long gap, whether it fell on a
 * request in flight or on the pause between two.
 */
export async function whileHealthProbed<T>(origin: string, work: () => Promise<T>): Promise<{ result: T; worst: number; answers: number }> {
  const answered: number[] = [performance.now()];
  let done = false;
  const probe = (async () => {
    while (!done) {
      const res = await request(`${origin}/healthz`);
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`/healthz answered ${res.statusCode}`);
      answered.push(performance.now());
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  let result: T;
  try {
    result = await work();
  } finally {
    done = true;
    await probe;
  }
  const gaps = answered.slice(1).map((at, i) => at - answered[i]!);
  return { result, worst: Math.max(...gaps), answers: gaps.length };
}
