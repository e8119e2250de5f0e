// What the bench runner, the load worker and the server under test exchange, and the records they write.

export interface Writer {
  provider: string;
  token: string;
  /** Records this writer owns (replaced in turn); writers never share an ID. */
  ids: string[];
}

export interface LoadSpec {
  url: string;
  connections: number;
  durationSec: number;
  /** Requests per second over all connections (a fixed-rate load for latency); unset = as fast as possible. */
  overallRate?: number;
  /** Responses with these statuses count as done. */
  expectStatus: number[];
  request:
    | { kind: 'get'; path: string; headers: Record<string, string> }
    | { kind: 'writes'; mode: 'replace' | 'create'; writers: Writer[]; tag: string }
    | {
        /** Owner launches of new threads: request i launches thread `t-<i>` of canvas `<tag>-<i / threadsPerCanvas>`. */
        kind: 'launches';
        token: string;
        profileIds: string[];
        threadsPerCanvas: number;
        tag: string;
      };
}

/** A request the plain `node:http` reference records from the server under test and then answers itself. */
export interface PlainRecord {
  path: string;
  headers: Record<string, string>;
}

/** The disk's floor (scripts/bench/fsync-latency.ts): appends + fdatasync in `dir`, at `rate` per second or back to back. */
export interface FsyncSpec {
  dir: string;
  durationSec: number;
  rate?: number;
}

export interface FsyncResult {
  writes: number;
  perSecond: number;
  /** Latency of one append + fdatasync, ms. */
  p50: number;
  p99: number;
}

export interface LoadResult {
  /** Expected responses per second. */
  perSecond: number;
  expected: number;
  unexpected: number;
  errors: number;
  /** Latency percentiles in milliseconds (autocannon's: whole milliseconds, paced passes corrected for omission). */
  p50: number;
  p99: number;
  /** Of an unpaced pass: the same percentiles of each expected response's own time, to the microsecond. */
  exact?: { p50: number; p99: number };
  durationSec: number;
}

export interface ServerReady {
  type: 'ready';
  port: number;
  /** Milliseconds from process start to listening. */
  startupMs: number;
  rss: number;
  /** The catalogue's ETag and size when the server started. */
  etag: string;
  bytes: number;
}

/** The server's answer to `{type: 'probe', gc?}`: memory after a full garbage collection (unless `gc: false`), open connections, CPU time. */
export interface ServerProbe {
  type: 'probe';
  rss: number;
  heapUsed: number;
  /** Memory outside the JS heap that JS objects hold (Buffers, sockets' pending writes). */
  external: number;
  connections: number;
  /** CPU time (user + system) the server process has used since it started, ms. */
  cpuMs: number;
}

/** A record body as a provider PUTs it; `rev` changes it so every replace is a real change. */
export function writeBody(id: string, rev: string) {
  return {
    schemaVersion: 1,
    name: `Bench resource ${id}`,
    description: `A benchmark record (${id}) describing a capability an agent may use; revision ${rev}.`,
    instructions: `Read $HUABU_RFS_URL/resources/${id} for details; its files live under $AGENT_RESOURCE_DIR/${id}.`,
  };
}
