# syntax=docker/dockerfile:1
# agent-resource-registry: build stage compiles TypeScript; the final stage holds only production
# dependencies and dist/, runs as the unprivileged `node` user, and keeps its data in the /data volume.

# Node 24 LTS, pinned by digest. The digest could not be pulled or checked from the machine this was
# written on; it is the one two unrelated public projects pin for node:24-bookworm-slim (24.18.0). Verify
# it before release: docker buildx imagetools inspect node:24-bookworm-slim
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The npm workspaces (packages/*) are part of the install: their manifests come with the root's.
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/
COPY packages/agentlet/package.json ./packages/agentlet/
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
COPY packages ./packages
RUN npm run build

FROM ${NODE_IMAGE}
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/
COPY packages/agentlet/package.json ./packages/agentlet/
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
# `npm start` / `npm run migrate` / `npm run import` / `npm run backup` run it first; without src/ it builds
# nothing, so the scripts run the compiled dist/ (node dist/scripts/migrate.js ... works too).
COPY --from=build /app/scripts/build-if-changed.mjs ./scripts/build-if-changed.mjs
# The data directory must exist and belong to the runtime user before VOLUME, so a fresh named
# volume inherits that ownership. /backups: where `docker exec <container> npm run backup -- --to
# /backups/<name>` writes (the runtime user may; mount a volume there to keep them; not a VOLUME, so no
# anonymous volume is made when nobody mounts one).
RUN mkdir -p /data /backups && chown node:node /data /backups
# Set PUBLIC_BASE_URL at run time to the address clients use: with HOST=0.0.0.0 the service refuses to
# start without it (agents would be handed http://0.0.0.0:8787/...).
ENV DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=8787
USER node
VOLUME /data
EXPOSE 8787
# No curl in slim images: ask /readyz with Node's own fetch, on HOST itself unless it is a wildcard
# address (then on loopback), so the check works whatever HOST is.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "const h = process.env.HOST || '127.0.0.1'; const a = ['0.0.0.0', ''].includes(h) ? '127.0.0.1' : ['::', '[::]'].includes(h) ? '[::1]' : h.includes(':') && !h.startsWith('[') ? '[' + h + ']' : h; fetch('http://' + a + ':' + (process.env.PORT || 8787) + '/readyz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/bundle/server.js"]
