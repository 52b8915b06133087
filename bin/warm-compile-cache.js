#!/usr/bin/env node
// Fills the compile cache (bin/compile-cache.js) with every runtime source of the image, so that a
// container with a read-only root filesystem starts without type stripping. Run at image build time
// (Dockerfile); importing a module only defines things, none of them starts a server. The cache is
// keyed by Node's flags, and the tunnel's commands run with more (bin/node-flags.js), so it then
// runs itself again with those added to fill their cache too.
import { execFileSync } from 'node:child_process';
import { flushCompileCache } from 'node:module';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { COMPILE_CACHE_DIR, enableSvcCompileCache } from './compile-cache.js';
import { TUNNEL_NODE_FLAGS } from './node-flags.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FOLDERS = ['cli', 'lib', 'sidecar', 'agent', 'operator', 'controller', 'serve', 'devidp'];

const files = FOLDERS.flatMap((folder) =>
  readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name)),
);
const status = enableSvcCompileCache();
for (const file of files) await import(pathToFileURL(file).href);
flushCompileCache();
console.log(`compile cache ${COMPILE_CACHE_DIR}: ${files.length} sources (status ${status?.status})`);
const missing = TUNNEL_NODE_FLAGS.filter((flag) => !process.execArgv.includes(flag));
if (missing.length > 0)
  execFileSync(process.execPath, [...process.execArgv, ...missing, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
  });
process.exit(0);
