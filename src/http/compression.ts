// Response compression. Two paths, one rule for which coding a body gets (br, gzip, or as it is):
// - @fastify/compress compresses every other answer per request: bodies of at least MIN_COMPRESSED_BYTES
//   whose type compresses (JSON, text, SVG, JavaScript, CSS), when `Accept-Encoding` asks for it. Such
//   answers carry no ETag of their own, or a weak one (Swagger UI's files) that a coding may share.
// - Routes that tag their body with a strong ETag (the catalogue lists, the capability snapshot, a
//   profile) or serve a body that never changes (/openapi.json) negotiate and compress it themselves with
//   `sendEncoded`, so the ETag names the bytes sent (`"<tag>"`, `"<tag>-br"`, `"<tag>-gz"`) and a 304 is
//   decided for the coding this request would get. The plugin leaves such a body alone (a compressed one
//   names its Content-Encoding; one sent as it is is marked to stay so), and still compresses the errors
//   these routes answer, like any other answer.
// Both paths send the coding `negotiateCoding` chooses (src/http/content-coding.ts) for the same header.
// Hijacked answers (the Server-Sent Events streams) never reach either path: they go out unbuffered.
import compress from '@fastify/compress';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { constants as zlibConstants } from 'node:zlib';
import {
  BROTLI_QUALITY,
  compressBytes,
  etagMatches,
  GZIP_LEVEL,
  MIN_COMPRESSED_BYTES,
  type CachedBody,
  type ContentCoding,
} from '../registry/catalogue-cache.js';
import { negotiateCoding } from './content-coding.js';

/**
 * Registers @fastify/compress for every route added after it. Request bodies are not decompressed (no
 * client sends compressed bodies, and a decompressed body would escape the body limit's meaning).
 */
export async function registerCompression(app: FastifyInstance): Promise<void> {
  await app.register(compress, {
    globalCompression: true,
    globalDecompression: false,
    encodings: ['br', 'gzip', 'identity'],
    threshold: MIN_COMPRESSED_BYTES,
    brotliOptions: {
      params: { [zlibConstants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT },
    },
    zlibOptions: { level: GZIP_LEVEL },
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const acceptEncoding = request.headers['accept-encoding'];
    if (acceptEncoding === undefined) return done(null, payload);
    // One rule for the coding, on both paths: the plugin is handed the coding `negotiateCoding` chose (its
    // own negotiation reads `*` as gzip even where gzip is refused: `gzip;q=0, *` would get gzip).
    const coding = negotiateCoding(acceptEncoding);
    request.headers['accept-encoding'] = coding;
    if (!(payload instanceof Readable)) return done(null, payload);
    if (reply.statusCode === 200 && coding !== 'identity' && request.url.startsWith(DOCS_FILES)) {
      return void sendDocsFile(request.url, reply, payload, coding).then((bytes) => done(null, bytes), done);
    }
    // Any other file stream would be compressed whatever its size, as the plugin cannot see a stream's
    // length; a file under the threshold is read into memory here so the threshold applies to it too.
    const length = Number(reply.getHeader('content-length'));
    if (!(length < MIN_COMPRESSED_BYTES)) return done(null, payload);
    readAll(payload).then((bytes) => done(null, bytes), done);
  });
}

/** Swagger UI's files, served by @fastify/static under /docs. */
const DOCS_FILES = '/docs/static/';
const TEXT_TYPES = /^(?:text\/|application\/(?:javascript|json)|image\/svg\+xml)/;
/** Their compressed copies by coding, path and ETag: a fixed set of files that never change while the process runs. */
const docsCopies = new Map<string, Promise<Buffer>>();

/**
 * A Swagger UI file in `coding`, compressed once per process and coding and kept (the bundle is 1.7 MB:
 * compressing it per page load would cost a core for a noticeable time); files under the threshold and
 * files that are not text go out as they are (the stream read into memory when small).
 */
async function sendDocsFile(url: string, reply: FastifyReply, file: Readable, coding: ContentCoding): Promise<Buffer | Readable> {
  const length = Number(reply.getHeader('content-length'));
  const type = String(reply.getHeader('content-type') ?? '');
  if (!(length >= MIN_COMPRESSED_BYTES) || !TEXT_TYPES.test(type)) {
    return length < MIN_COMPRESSED_BYTES ? readAll(file) : file;
  }
  const key = `${coding} ${url.split('?')[0]} ${String(reply.getHeader('etag'))}`;
  let copy = docsCopies.get(key);
  if (copy === undefined) {
    const built = readAll(file).then((bytes) => compressBytes(bytes, coding));
    copy = built;
    docsCopies.set(key, built);
    built.catch(() => docsCopies.delete(key));
  } else {
    file.destroy();
  }
  const bytes = await copy;
  reply.header('content-encoding', coding).header('content-length', bytes.length).header('vary', 'Accept-Encoding');
  return bytes;
}

function readAll(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('error', reject);
    stream.once('end', () => resolve(Buffer.concat(chunks)));
  });
}

/**
 * Sends `cached` in the coding `Accept-Encoding` asks for (br, gzip, or as it is; bodies under
 * MIN_COMPRESSED_BYTES always as they are), with `Vary: Accept-Encoding`. `etag`: `conditional` (the
 * default) sends the ETag of the coding sent and answers `If-None-Match` with that ETag by 304 without a
 * body; `sent` only sends it (the answer to a write); `none` sends none. A compressed copy comes from
 * `cached`, built once per entry and shared by later reads of the same entry.
 */
export function sendEncoded(
  reply: FastifyReply,
  headers: IncomingHttpHeaders,
  cached: CachedBody,
  options: { type: string; etag?: 'conditional' | 'sent' | 'none' },
): FastifyReply | Promise<FastifyReply> {
  const coding = cached.compressible ? negotiateCoding(headers['accept-encoding']) : 'identity';
  reply.header('vary', 'Accept-Encoding');
  const tagging = options.etag ?? 'conditional';
  if (tagging !== 'none') {
    const etag = cached.etagFor(coding);
    reply.header('etag', etag);
    if (tagging === 'conditional' && etagMatches(headers['if-none-match'], etag)) return reply.code(304).send();
  }
  reply.type(options.type);
  if (coding === 'identity') {
    // The ETag names the identity bytes: @fastify/compress must not compress them. Its one switch per
    // answer is this request header (it compresses nothing for a request that carries it).
    reply.request.headers['x-no-compression'] = 'identity chosen';
    return reply.send(cached.bytes);
  }
  return cached.encoded(coding).then((bytes) => reply.header('content-encoding', coding).send(bytes));
}
