# One image for every svc role; the role is the `svc` subcommand given as the container's args:
#   svc operator ... | svc frontend --config ... | svc agent backend ... | (later) svc controller ...
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step; the
# compile cache filled below lets processes start without stripping (bin/compile-cache.js).
#
#   docker build -t registry.example.com/svc:0.1.0 .
#
# Runs as the non-root uid 1000 (numeric, so runAsNonRoot can verify it), writes nothing outside
# /tmp (mount an emptyDir there), and works with readOnlyRootFilesystem: true.

FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; no install scripts (none of them needs one).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM node:24-slim
ENV NODE_ENV=production
# glibc gives each thread that allocates (V8's compiler and GC helpers, libuv's pool) its own
# malloc arena, up to 8 per core, and keeps what they freed: 22 MiB of a loaded frontend's RSS was
# in such arenas. Two arenas cut its peak RSS by 8-13 MiB at no measurable CPU cost per request
# (bench:frontend runs its Node proxies with this image's ENV lines; docs/benchmarks.md).
ENV MALLOC_ARENA_MAX=2
# Node sizes V8's young generation from the container's memory limit: 1 MiB semi-spaces in a
# 256 MiB pod, where a loaded frontend spent 30 µs of every request in scavenges (16 % of its CPU).
# 2 MiB halves that for about 1 MiB of RSS; 16 MiB (an unlimited host's) costs 25 MiB more.
ENV NODE_OPTIONS=--max-semi-space-size=2
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
# .dockerignore admits only package*.json and the runtime source folders (tests excluded).
COPY . .
# Node's compile cache, filled here because the root filesystem is read-only at run time: starts
# then skip type stripping and its WebAssembly parser (about 17 MiB of RSS per process). The cache
# is keyed by V8's flags, so it is filled with the entrypoint's (and, by the script itself, with
# those plus the flags `svc serve`, `svc controller` and `svc public-frontend` re-execute with:
# bin/node-flags.js).
RUN node --no-maglev --no-parallel-scavenge bin/warm-compile-cache.js
USER 1000:1000
# --no-maglev: V8's mid-tier compiler took 14.5 MiB of a loaded frontend's peak RSS in a 256 MiB pod
# (95.2 -> 80.7 MiB) at no measurable CPU per request (155 vs 154 us, same run; TurboFan still
# optimizes what is hot; docs/benchmarks.md). V8 flags are refused in NODE_OPTIONS, hence here.
# --no-parallel-scavenge: a loaded frontend collects its 2 MiB young generation ~160 times a second;
# handing each collection to V8's helper threads cost 5-9 % more CPU per request than doing it on
# the main thread (same-run pairs, pinned and not; docs/benchmarks.md, "Memory").
ENTRYPOINT ["node", "--no-maglev", "--no-parallel-scavenge", "/app/bin/svc.js"]
CMD ["--help"]
