import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

let environment: Readonly<Record<string, string>> | undefined;
let nodeFlags: readonly string[] | undefined;

function dockerfile(): string {
  return readFileSync(fileURLToPath(new URL('../../Dockerfile', import.meta.url)), 'utf8');
}

/**
 * The environment the image gives every svc process (the Dockerfile's `ENV NAME=value` lines, e.g.
 * MALLOC_ARENA_MAX and NODE_OPTIONS), so a benchmark runs svc as the image does. Read once.
 */
export function imageEnvironment(): Readonly<Record<string, string>> {
  if (environment) return environment;
  const env: Record<string, string> = {};
  for (const match of dockerfile().matchAll(/^ENV ([A-Z_][A-Z0-9_]*)=(\S+)$/gm)) env[match[1] ?? ''] = match[2] ?? '';
  environment = env;
  return env;
}

/**
 * The Node flags of the image's entrypoint (`ENTRYPOINT ["node", <flags…>, "/app/bin/svc.js"]`),
 * which NODE_OPTIONS cannot carry (V8 flags such as --no-maglev). A compile cache is keyed by them,
 * so `warmCompileCache` fills it with the same flags. Read once.
 */
export function imageNodeFlags(): readonly string[] {
  if (nodeFlags) return nodeFlags;
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile())?.[1];
  const words = entrypoint ? (JSON.parse(entrypoint) as string[]) : [];
  if (words[0] !== 'node' || words.at(-1) !== '/app/bin/svc.js')
    throw new Error(`unexpected Dockerfile ENTRYPOINT ${entrypoint ?? '(none)'}`);
  nodeFlags = words.slice(1, -1);
  return nodeFlags;
}

/**
 * Fills `root`'s compile cache as the image build does (same Node flags, plus `extraFlags` for a
 * process started with more), so svc starts as in a pod.
 */
export function warmCompileCache(root: string, extraFlags: readonly string[] = []): void {
  execFileSync(process.execPath, [...imageNodeFlags(), ...extraFlags, join(root, 'bin/warm-compile-cache.js')], {
    cwd: root,
    stdio: 'ignore',
  });
}
