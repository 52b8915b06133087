// Preload (`node --import …/report-loaded-modules.ts`) for tests of what a process loads: at exit
// it writes the Node builtins and the npm packages it loaded, as JSON, to $SVC_TEST_LOADED_MODULES, and
// whether Node's bundled undici (its fetch, an internal module the builtins list leaves out) was loaded.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const packages = new Set<string>();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    const name = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url)?.[1];
    if (name) packages.add(name);
    return resolved;
  },
});

process.on('exit', () => {
  // Node's list of the builtins (and their internals) this process loaded, in order; not typed in @types/node.
  const { moduleLoadList } = process as NodeJS.Process & { moduleLoadList: readonly string[] };
  const builtins = moduleLoadList
    .filter((m) => m.startsWith('NativeModule ') && !m.startsWith('NativeModule internal/'))
    .map((m) => m.slice('NativeModule '.length));
  writeFileSync(
    process.env.SVC_TEST_LOADED_MODULES as string,
    JSON.stringify({
      builtins,
      packages: [...packages],
      undici: moduleLoadList.includes('NativeModule internal/deps/undici/undici'),
    }),
  );
});
