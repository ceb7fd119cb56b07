# syntax=docker/dockerfile:1
# The suggest-task service as an image: built from the repository with the build's tools,
# run with the production dependencies only, as a non-root numeric user, node itself as
# PID 1's command so that SIGTERM reaches the service (it drains, then exits). No Redis is
# inside: set REDIS_URL (without it the container stops at once and says so).
#
#   docker build -t suggest-task .
#   docker run -e REDIS_URL=redis://redis:6379 -e AUTH_TOKENS=... -p 8080:8080 suggest-task
#
# NODE_IMAGE names the base of every stage (any Node 20, 22 or 24 on Debian).
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json buf.yaml buf.gen.yaml ./
COPY tools ./tools
COPY proto ./proto
COPY gen ./gen
COPY server ./server
COPY sdk ./sdk
COPY inspector ./inspector
RUN npm run build

FROM ${NODE_IMAGE} AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# A numeric user, so that Kubernetes can enforce runAsNonRoot; it owns nothing here.
USER 10001:10001
EXPOSE 8080
CMD ["node", "dist/server/main.js"]
