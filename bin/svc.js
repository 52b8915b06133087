#!/usr/bin/env node
// Entry point of the `svc` command. Node >= 22.18 runs the TypeScript sources directly (type
// stripping), so there is no build step; the version check keeps the error clear on older Node.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`svc needs Node.js >= 22.18 (24 LTS preferred); this is ${process.version}.`);
  process.exit(1);
}
// The tunnel's processes re-execute here with their V8 flags (bin/node-flags.js), before loading svc.
const { reexecWithCommandFlags } = await import('./node-flags.js');
reexecWithCommandFlags();
const { enableSvcCompileCache } = await import('./compile-cache.js');
enableSvcCompileCache();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
