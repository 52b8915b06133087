#!/usr/bin/env node
// Fills the compile cache (bin/compile-cache.js) with every runtime source of the image, so that a
// container with a read-only root filesystem starts without type stripping. Run at image build time
// (Dockerfile); importing a module only defines things, none of them starts a server.
import { flushCompileCache } from 'node:module';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { COMPILE_CACHE_DIR, enableSvcCompileCache } from './compile-cache.js';

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
process.exit(0);
