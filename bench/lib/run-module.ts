/**
 * Child-process entry: `node bench/lib/run-module.ts <module> <export>` calls
 * `export(JSON.parse($BENCH_MODULE_ARG))` and prints `BENCH_READY <json result>` on stdout. When the
 * result has a `close()` method the process stays up (a server) until SIGTERM/SIGINT or until its
 * parent goes away (stdin closes), then closes it; otherwise it exits at once.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const READY_PREFIX = 'BENCH_READY ';

async function main(): Promise<void> {
  const [modulePath, exportName] = process.argv.slice(2);
  if (!modulePath || !exportName) throw new Error('usage: run-module.ts <module> <export>');
  const url = pathToFileURL(isAbsolute(modulePath) ? modulePath : resolve(modulePath)).href;
  const mod = (await import(url)) as Record<string, unknown>;
  const fn = mod[exportName];
  if (typeof fn !== 'function') throw new Error(`${modulePath} has no function export ${exportName}`);
  const arg: unknown = JSON.parse(process.env.BENCH_MODULE_ARG ?? 'null');
  const result = (await (fn as (a: unknown) => unknown)(arg)) as { close?: () => unknown } | undefined;
  process.stdout.write(`${READY_PREFIX}${JSON.stringify(result ?? null)}\n`);
  if (typeof result?.close !== 'function') return;
  const close = result.close.bind(result);
  await new Promise<void>((done) => {
    process.once('SIGTERM', done);
    process.once('SIGINT', done);
    process.stdin.once('end', done);
    process.stdin.once('close', done);
    process.stdin.resume();
  });
  await close();
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`run-module: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
