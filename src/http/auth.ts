// Authentication: one bearer-token parser maps a presented token to a Principal (constant-time digest
// comparison), and strategies for @fastify/auth decide by role. Each route group registers its own
// `onRequest` check through `protect()`, which also stamps the security requirement into the route's
// OpenAPI schema. A missing or unknown token is 401; a valid token of the wrong role is 403. A request that
// stays open (a stream) keeps its credential under the same rule with `watchCredential`.
import fastifyAuth from '@fastify/auth';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type {} from '@fastify/swagger';
import { matchDigest, tokenDigest, TOKEN_PREFIX, verifyCanvasToken, type CanvasClaims } from '../credentials/tokens.js';
import type { Credentials } from '../credentials/credentials-file.js';
import { actorOf, type Principal } from '../credentials/principal.js';
import type { Revocation, Revocations } from '../credentials/revocations.js';
import { AppError } from '../errors.js';
import type { MachineRegistry } from '../machines/machine-registry.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import { errors, withErrors } from './openapi.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the request's bearer token has been checked (null: none or unknown). */
    principal: Principal | null;
  }
  interface FastifyInstance {
    requireOwner: AuthStrategy;
    requireProvider: AuthStrategy;
    requireHuabu: AuthStrategy;
    requireCanvas: AuthStrategy;
    /**
     * Keeps an open request's credential under watch: `lost` is called once, within a second, when it stops
     * holding (revoked, expired, its machine revoked, even when enrolled again). Returns the function that
     * stops watching (call it when the request ends).
     */
    watchCredential(request: FastifyRequest, lost: (why: string) => void): () => void;
  }
}

type AuthStrategy = (request: FastifyRequest) => Promise<void>;

/** OpenAPI security scheme names, declared in src/http/openapi.ts. */
export type SecurityScheme = 'ownerToken' | 'providerToken' | 'canvasToken';

export interface AuthOptions {
  credentials: Credentials;
  machines: MachineRegistry;
  now: () => Date;
  /**
   * Told once per request whose credential is refused (401, no principal); answers the error to send
   * instead, if any (the per-address bound on failed authentications: src/http/refusals.ts).
   */
  onAuthFailure?: (request: FastifyRequest) => Promise<AppError | undefined>;
  /** Told of every credential that stops holding in this process: watched credentials are checked at once. */
  revocations?: Revocations;
  /** How often a watched credential is checked again in full (default CREDENTIAL_RECHECK_MS). */
  credentialRecheckMs?: number;
}

/** How often a watched credential's expiry is compared with the clock (no I/O). */
export const EXPIRY_CHECK_MS = 250;
/**
 * How often a watched credential is checked again in full, reading the store: what another replica
 * revoked. A revocation in this process is acted on at once.
 */
export const CREDENTIAL_RECHECK_MS = 15_000;

interface Watch {
  token: string;
  principal: Principal;
  lost: (why: string) => void;
  checking: boolean;
  again: boolean;
}

/** Whether a revocation concerns the credential `principal` was identified by. */
function concerns(revocation: Revocation, principal: Principal): boolean {
  if (revocation.kind === 'canvas') return principal.kind === 'canvas' && principal.canvasId === revocation.canvasId;
  return (
    (principal.kind === 'canvas' && principal.agentletId === revocation.machineId) ||
    (principal.kind === 'provider' && principal.provider === revocation.machineId)
  );
}

const IDENTIFIED = Symbol('principal identified');
/** How many verified canvas tokens are remembered; past it the memory starts over (a few hundred bytes each). */
const VERIFIED_CANVAS_TOKENS = 4096;
const REPLACED = Symbol('refusal replaced');

function unauthorized(message: string): AppError {
  return new AppError('unauthorized', message);
}

function forbidden(message: string): AppError {
  return new AppError('forbidden', message);
}

function bearerToken(request: FastifyRequest): string | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  if (query && typeof query === 'object' && ('access_token' in query || 'token' in query)) {
    throw unauthorized('Tokens are accepted only in the Authorization header, never in the URL.');
  }
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  if (!match) throw unauthorized('Authorization must be `Bearer <token>`.');
  return match[1];
}

export const authPlugin = fp<AuthOptions>(
  async (app, { credentials, machines, now, onAuthFailure, revocations, credentialRecheckMs }) => {
    const ownerDigest = tokenDigest(credentials.ownerToken);
    const huabuDigest = tokenDigest(credentials.huabuProviderToken);

    // Canvas tokens whose signature checked out, keyed by the token's SHA-256 (never the token): an agent
    // presents the same token on every read, and checking its HMAC again cost several times the digest.
    // Expiry is checked on every request, cached or not; the enrollment and revocation checks follow it.
    const verifiedCanvas = new Map<string, CanvasClaims>();
    function canvasClaims(token: string, nowSeconds: number): CanvasClaims {
      const key = tokenDigest(token).toString('base64');
      const cached = verifiedCanvas.get(key);
      if (cached) {
        if (cached.exp <= nowSeconds) throw unauthorized('The canvas token has expired.');
        return cached;
      }
      const check = verifyCanvasToken(token, credentials.canvasTokenSecret, nowSeconds);
      if (!check.ok) throw unauthorized(check.reason === 'expired' ? 'The canvas token has expired.' : 'The canvas token is not valid.');
      if (verifiedCanvas.size >= VERIFIED_CANVAS_TOKENS) verifiedCanvas.clear();
      verifiedCanvas.set(key, check.claims);
      return check.claims;
    }

    async function identify(token: string): Promise<Principal | null> {
      if (token.startsWith(TOKEN_PREFIX.canvas)) {
        const claims = canvasClaims(token, Math.floor(now().getTime() / 1000));
        // A canvas token dies with the enrollment it was minted under: a revoke, even when followed by a new
        // enrollment of the same machine ID, ends it.
        if ((await machines.activeEnrollment(claims.agentletId)) !== claims.enrolledAt) {
          throw unauthorized('The canvas token is not valid.');
        }
        // ... and with a revocation of its canvas's tokens.
        if (await machines.isCanvasTokenRevoked(claims.canvasId, claims.mintedAtMs ?? 0))
          throw unauthorized('The canvas token has been revoked.');
        return { kind: 'canvas', canvasId: claims.canvasId, agentletId: claims.agentletId, expiresAt: claims.exp };
      }
      const machineId = await machines.authenticate(token);
      if (machineId) return { kind: 'provider', provider: machineId };
      const match = matchDigest(tokenDigest(token), [ownerDigest, huabuDigest]);
      if (match === 0) return { kind: 'owner' };
      if (match === 1) return { kind: 'provider', provider: HOST_PROVIDER };
      return null;
    }

    /** The refusal of an unidentified caller, once counted (a 429 instead when its address is past its bound). */
    async function refused(request: FastifyRequest & { [REPLACED]?: AppError }, err: unknown): Promise<unknown> {
      const instead = onAuthFailure ? await onAuthFailure(request) : undefined;
      if (instead) request[REPLACED] = instead;
      return instead ?? err;
    }

    /** Identifies the caller once per request; 401 when there is no usable token. */
    async function principalOf(request: FastifyRequest): Promise<Principal> {
      const r = request as FastifyRequest & { [IDENTIFIED]?: boolean; [REPLACED]?: AppError };
      if (!r[IDENTIFIED]) {
        r[IDENTIFIED] = true;
        try {
          const token = bearerToken(request);
          request.principal = token === undefined ? null : await identify(token);
          if (token === undefined) throw unauthorized('A bearer token is required.');
        } catch (err) {
          // Only a refused credential counts; a store that cannot answer (503) is not the caller's failure.
          throw err instanceof AppError && err.code === 'unauthorized' ? await refused(r, err) : err;
        }
        if (!request.principal) throw await refused(r, unauthorized('The bearer token is missing or not recognized.'));
      }
      // A later strategy of the same request answers as the first did.
      if (r[REPLACED]) throw r[REPLACED];
      if (!request.principal) throw unauthorized('The bearer token is missing or not recognized.');
      return request.principal;
    }

    // Credentials held open: each is checked again at once when a revocation concerns it, its expiry on
    // every tick, and in full every credentialRecheckMs. One timer for all of them, running while any is held.
    const watches = new Set<Watch>();
    const recheckMs = credentialRecheckMs ?? CREDENTIAL_RECHECK_MS;
    let ticker: NodeJS.Timeout | undefined;
    let fullCheckAt = 0;
    const unwatch = (w: Watch): boolean => {
      if (!watches.delete(w)) return false;
      if (watches.size === 0) {
        clearInterval(ticker);
        ticker = undefined;
      }
      return true;
    };
    const lose = (w: Watch, why: string) => {
      if (unwatch(w)) w.lost(why);
    };
    /** The same identification as at the request's start; the credential holds while it names the same principal. */
    async function recheck(w: Watch): Promise<void> {
      if (w.checking) return void (w.again = true);
      w.checking = true;
      try {
        do {
          w.again = false;
          const current = await identify(w.token).then(
            (p) => p,
            // Refused: it no longer holds. Anything else (the store cannot answer) is not a revocation.
            (err: unknown) => (err instanceof AppError && err.code === 'unauthorized' ? null : w.principal),
          );
          if (!current || actorOf(current) !== actorOf(w.principal)) return lose(w, 'its credential no longer holds');
        } while (w.again && watches.has(w));
      } finally {
        w.checking = false;
      }
    }
    const tick = () => {
      const nowMs = now().getTime();
      const full = nowMs >= fullCheckAt;
      if (full) fullCheckAt = nowMs + recheckMs;
      for (const w of [...watches]) {
        if (w.principal.kind === 'canvas' && w.principal.expiresAt * 1000 <= nowMs) lose(w, 'its canvas token expired');
        else if (full) void recheck(w);
      }
    };
    revocations?.subscribe((revocation) => {
      for (const w of [...watches]) if (concerns(revocation, w.principal)) void recheck(w);
    });
    app.addHook('onClose', (_app, done) => {
      clearInterval(ticker);
      watches.clear();
      done();
    });
    app.decorate('watchCredential', (request: FastifyRequest, lost: (why: string) => void) => {
      const token = bearerToken(request);
      if (token === undefined || !request.principal) throw unauthorized('A bearer token is required.');
      const w: Watch = { token, principal: request.principal, lost, checking: false, again: false };
      watches.add(w);
      if (!ticker) {
        fullCheckAt = now().getTime() + recheckMs;
        ticker = setInterval(tick, EXPIRY_CHECK_MS);
        ticker.unref();
      }
      // A revocation between the request's identification and now is caught here.
      void recheck(w);
      return () => void unwatch(w);
    });

    app.decorateRequest('principal', null);
    app.decorate('requireOwner', async (request: FastifyRequest) => {
      if ((await principalOf(request)).kind !== 'owner') throw forbidden('This operation needs the owner token.');
    });
    app.decorate('requireProvider', async (request: FastifyRequest) => {
      if ((await principalOf(request)).kind !== 'provider') throw forbidden('This operation needs a provider token.');
    });
    app.decorate('requireHuabu', async (request: FastifyRequest) => {
      const p = await principalOf(request);
      if (p.kind !== 'provider' || p.provider !== HOST_PROVIDER) throw forbidden('This operation needs the Huabu provider token.');
    });
    app.decorate('requireCanvas', async (request: FastifyRequest) => {
      if ((await principalOf(request)).kind !== 'canvas') throw forbidden('This operation needs a canvas token.');
    });
    await app.register(fastifyAuth);
  },
  { name: 'registry-auth' },
);

/**
 * Guards every route registered afterwards in this (encapsulated) instance: any one of `strategies`
 * admits the caller. The route schemas get the matching OpenAPI `security` requirement and its refusals.
 */
export function protect(app: FastifyInstance, strategies: AuthStrategy[], security: SecurityScheme[]): void {
  // One strategy is the hook itself (its error answers the request, as @fastify/auth would pass it on);
  // @fastify/auth combines two or more. Saves its per-request bookkeeping on the read paths.
  app.addHook('onRequest', strategies.length === 1 ? strategies[0]! : app.auth(strategies));
  app.addHook('onRoute', (route) => {
    route.schema = {
      ...route.schema,
      security: security.map((s) => ({ [s]: [] })),
      // 429: the per-address bound on failed authentications (src/http/refusals.ts) answers before the token is read.
      response: withErrors(
        errors('unauthorized', 'forbidden', 'rate_limited'),
        route.schema?.response as Record<string, unknown> | undefined,
      ),
    };
  });
}

/**
 * Admits, on the routes registered afterwards, only a canvas token of the canvas the URL names (`:canvasId`):
 * another canvas's token is 403 and learns nothing. Follows `protect(app, [app.requireCanvas], ...)`.
 */
export function requireUrlCanvas(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const principal = request.principal;
    const { canvasId } = request.params as { canvasId?: string };
    if (principal?.kind !== 'canvas' || principal.canvasId !== canvasId) throw forbidden('This token is not valid for this canvas.');
    done();
  });
}
