# Image of the fulfilment consumer (worker + Kafka bridge) and of the local warehouse service; see docker-compose.yml.
# Debian (glibc), not Alpine: the Temporal SDK's native core-bridge ships prebuilt binaries for linux-gnu only.
FROM node:20.20.2-bookworm-slim

WORKDIR /app
RUN chown node:node /app
USER node

# Dependencies first, so a source change does not reinstall them. Nothing the app needs has an install script
# (the Temporal core-bridge binaries are inside its npm package); dev dependencies are only for tests and lint.
COPY --chown=node:node package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY --chown=node:node . .
# State dir of the app (tools/stack/paths.ts), writable by the node user; the warehouse keeps its shipments under it.
RUN mkdir -p .stack/warehouse

# TypeScript runs through tsx, as with `npm start` (= tsx tools/start.ts). `node --import tsx` keeps a single process,
# so `docker stop`'s SIGTERM reaches tools/start.ts directly and it shuts down cleanly.
CMD ["node", "--import", "tsx", "tools/start.ts"]
