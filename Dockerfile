# syntax=docker/dockerfile:1
# agent-resource-registry: build stage compiles TypeScript; the final stage holds only production
# dependencies and dist/, runs as the unprivileged `node` user, and keeps its data in the /data volume.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
# The data directory must exist and belong to the runtime user before VOLUME, so a fresh named
# volume inherits that ownership.
RUN mkdir -p /data && chown node:node /data
# Set PUBLIC_BASE_URL at run time to the address clients use (it defaults to http://HOST:PORT).
ENV DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=8787
USER node
VOLUME /data
EXPOSE 8787
# No curl in slim images: ask /readyz with Node's own fetch.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8787) + '/readyz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/server.js"]
