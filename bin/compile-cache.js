// Node's compile cache for svc's sources. Type stripping loads a WebAssembly TypeScript parser
// (about 17 MiB of resident memory, kept for the life of the process) and strips every file at each
// start; the compile cache keeps each file's stripped source and V8 code, keyed by path and content,
// so a start that finds every file there never loads the parser. The image fills the cache at build
// time (bin/warm-compile-cache.js) because pods run with a read-only root filesystem; elsewhere it
// fills on first use. NODE_COMPILE_CACHE, when set, names another directory (Node's own variable).
import { enableCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';

export const COMPILE_CACHE_DIR =
  process.env.NODE_COMPILE_CACHE || fileURLToPath(new URL('../.compile-cache', import.meta.url));

/** Best effort: an unwritable or missing directory only means no cache (Node reports it, never throws). */
export function enableSvcCompileCache() {
  return enableCompileCache?.(COMPILE_CACHE_DIR);
}
