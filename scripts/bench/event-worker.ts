// Scenario 11's other processes: a subscriber process holding many `GET /api/acp/events`
// streams (raw node:http, one socket each), and a writer process registering new records at a fixed rate.
// Both stamp times with `performance.timeOrigin + performance.now()`: the wall clock at process start plus a
// monotonic offset, so processes on one machine compare to well under a millisecond and no clock step
// during a run moves a figure.
import http from 'node:http';
import net from 'node:net';
import { Pool } from 'undici';
import { writeBody, type Writer } from './protocol.js';

export type EventWorkerCommand =
  | { kind: 'subscribe'; url: string; token: string; count: number; concurrency: number }
  /** Streams that never read their socket: the request is sent, then nothing is ever read. */
  | { kind: 'stall'; url: string; token: string; count: number; since: string }
  /** Latencies of the given writes (ID → acknowledgement time) once all arrived, then forgets what was received. */
  | { kind: 'collect'; acks: Record<string, number> }
  | { kind: 'write'; url: string; writers: Writer[]; rate: number; durationSec: number; tag: string }
  | { kind: 'close' };

export interface Collected {
  /** Receive time − acknowledgement time, ms, one per subscriber and acknowledged write seen. */
  latencies: number[];
  /** Subscriber × write pairs never received. */
  missing: number;
  /** Reading streams still open. */
  open: number;
}

export interface Written {
  /** Record ID → when its 201 arrived. */
  acks: Record<string, number>;
  perSecond: number;
  errors: number;
  p50: number;
  p99: number;
}

export const now = () => performance.timeOrigin + performance.now();
export const quantile = (sorted: ArrayLike<number>, q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** Received record IDs → receive times (one per subscriber that got it). */
const received = new Map<string, number[]>();
const readers: http.ClientRequest[] = [];
let openReaders = 0;
const stalled: net.Socket[] = [];

const SUBJECT = '"subject":{"kind":"resource","id":"';

/** Minimal SSE parsing: only the `data:` lines' subject ID matters; every event of a chunk shares its time. */
function onChunk(state: { rest: string }, chunk: string): void {
  const at = now();
  const text = state.rest + chunk;
  const cut = text.lastIndexOf('\n');
  state.rest = cut < 0 ? text : text.slice(cut + 1);
  let from = 0;
  for (;;) {
    const i = text.indexOf(SUBJECT, from);
    if (i < 0 || i > cut) break;
    const start = i + SUBJECT.length;
    const stop = text.indexOf('"', start);
    const id = text.slice(start, stop);
    let times = received.get(id);
    if (!times) received.set(id, (times = []));
    times.push(at);
    from = stop;
  }
}

/** 503 `overloaded` (the server's event loop fell behind, e.g. on a loaded machine) is retried, as a client would. */
async function subscribeOne(url: string, token: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const status = await openStream(url, token);
    if (status === 200) return;
    if (status !== 503 || attempt >= 40) throw new Error(`events stream answered ${status}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function openStream(url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${url}/api/acp/events`,
      { agent: false, headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` } },
      (res) => {
        if (res.statusCode !== 200) {
          resolve(res.statusCode ?? 0);
          res.resume();
          return;
        }
        openReaders++;
        const state = { rest: '' };
        res.setEncoding('utf8');
        let first = true;
        res.on('data', (chunk: string) => {
          if (first) {
            first = false;
            resolve(200); // the stream's opening lines: subscribed from here on
          }
          onChunk(state, chunk);
        });
        res.on('close', () => openReaders--);
      },
    );
    req.on('error', reject);
    readers.push(req);
  });
}

async function subscribe(c: Extract<EventWorkerCommand, { kind: 'subscribe' }>): Promise<{ opened: number }> {
  let next = 0;
  // A bounded number of connects in flight: a thousand at once would overflow the listen backlog.
  const lane = async () => {
    while (next < c.count) {
      next++;
      await subscribeOne(c.url, c.token);
    }
  };
  await Promise.all(Array.from({ length: Math.min(c.concurrency, c.count) }, lane));
  return { opened: openReaders };
}

async function stall(c: Extract<EventWorkerCommand, { kind: 'stall' }>): Promise<{ opened: number }> {
  const { hostname, port } = new URL(c.url);
  for (let i = 0; i < c.count; i++) {
    const socket = net.connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.on('error', () => undefined);
    socket.pause();
    socket.write(
      `GET /api/acp/events?since=${c.since} HTTP/1.1\r\nhost: ${hostname}\r\naccept: text/event-stream\r\nauthorization: Bearer ${c.token}\r\n\r\n`,
    );
    stalled.push(socket);
  }
  return { opened: stalled.length };
}

/** Waits (up to 10 s) until every reading stream has every acknowledged write's event, then reports. */
async function collect(acks: Record<string, number>): Promise<Collected> {
  const deadline = now() + 10_000;
  const complete = () => Object.keys(acks).every((id) => (received.get(id)?.length ?? 0) >= openReaders);
  while (!complete() && now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const latencies: number[] = [];
  let missing = 0;
  for (const [id, ack] of Object.entries(acks)) {
    const times = received.get(id) ?? [];
    for (const t of times) latencies.push(t - ack);
    missing += Math.max(0, openReaders - times.length);
  }
  received.clear();
  return { latencies, missing, open: openReaders };
}

/** New records at a fixed rate over a few keep-alive connections; write i is due at start + i / rate. */
async function write(c: Extract<EventWorkerCommand, { kind: 'write' }>): Promise<Written> {
  const pool = new Pool(c.url, { connections: 8 });
  const acks: Record<string, number> = {};
  const took: number[] = [];
  let errors = 0;
  const total = Math.round(c.rate * c.durationSec);
  const start = now() + 20;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / c.rate;
    const wait = due - now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const writer = c.writers[i % c.writers.length]!;
    const id = `ev-${c.tag}-${i}`;
    const sent = now();
    pending.push(
      pool
        .request({
          method: 'PUT',
          path: `/api/acp/providers/${writer.provider}/resources/${id}`,
          headers: { authorization: `Bearer ${writer.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(writeBody(id, c.tag)),
        })
        .then(
          async (res) => {
            await res.body.dump();
            const at = now();
            if (res.statusCode === 201) {
              acks[id] = at;
              took.push(at - sent);
            } else errors++;
          },
          () => void errors++,
        ),
    );
  }
  await Promise.all(pending);
  const elapsed = (now() - start) / 1000;
  await pool.close();
  took.sort((a, b) => a - b);
  return {
    acks,
    perSecond: took.length / elapsed,
    errors,
    p50: took.length ? quantile(took, 0.5) : NaN,
    p99: took.length ? quantile(took, 0.99) : NaN,
  };
}

async function handle(c: EventWorkerCommand): Promise<unknown> {
  switch (c.kind) {
    case 'subscribe':
      return subscribe(c);
    case 'stall':
      return stall(c);
    case 'collect':
      return collect(c.acks);
    case 'write':
      return write(c);
    case 'close':
      for (const r of readers) r.destroy();
      for (const s of stalled) s.destroy();
      return {};
  }
}

process.on('message', (c: EventWorkerCommand) => {
  handle(c).then(
    (result) => process.send?.({ ok: true, result }),
    (err: unknown) => process.send?.({ ok: false, error: String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
