// Node/V8 flags that only some svc commands run with, applied by re-executing Node before svc loads.
//
// The processes on a tunnel's path (the installation: `svc controller`, `svc public-frontend`; the
// agent: `svc serve`) relay bulk data, and there V8's own heap sizing costs half their CPU: it keeps
// the old generation's limit about 1.1-1.4x its live size (a relay allocates little there, so V8
// judges collections cheap), so every few MiB of promoted stream objects starts a full mark-compact,
// 40-56 of them per 600 MiB relayed. `--heap-growing-percent=300` sets the limit at 4x the live size
// after each collection (V8's own ceiling on a large-memory host) and leaves 1-5 (docs/benchmarks.md,
// "TCP shares"). The young generation's size changed nothing there (1 to 64 MiB semi-spaces measured).
//
// It is a V8 flag: refused in NODE_OPTIONS, and v8.setFlagsFromString at run time changes V8's flag
// hash, so every module loaded afterwards misses the compile cache and rewrites its entry. Hence a
// re-execution with the flag on Node's command line. `svc frontend` (the share pod sidecar, with its
// own memory target) and the one-shot commands are not re-executed.

/** The commands whose process carries tunnel traffic. */
export const TUNNEL_COMMANDS = new Set(['serve', 'controller', 'public-frontend']);

/** What those processes run with: the old generation's limit at 4x its live size after each mark-compact. */
export const TUNNEL_NODE_FLAGS = Object.freeze(['--heap-growing-percent=300']);

/**
 * The flags to add to Node's command line before running `argv` (the arguments after `bin/svc.js`),
 * or none: none for other commands, and none when Node already runs with a value of each flag (one
 * given on the command line is the operator's choice, and a re-executed process sees its own).
 * @param {readonly string[]} argv
 * @param {readonly string[]} execArgv
 * @returns {string[]}
 */
export function extraNodeFlags(argv, execArgv) {
  if (!TUNNEL_COMMANDS.has(argv[0] ?? '')) return [];
  /** @param {string} flag */
  const named = (flag) => flag.split('=')[0];
  return TUNNEL_NODE_FLAGS.filter((flag) => !execArgv.some((given) => named(given) === named(flag)));
}

/**
 * Replaces this process (same pid, stdio and environment) with Node running the same script with
 * the command's extra flags. Returns only when there is nothing to add or it cannot: on Windows
 * (no `process.execve`), or in a process with an IPC channel (a cluster worker or a forked child,
 * whose channel would not survive the exec); those run without the flags.
 */
export function reexecWithCommandFlags() {
  const extra = extraNodeFlags(process.argv.slice(2), process.execArgv);
  if (extra.length === 0 || typeof process.execve !== 'function' || process.env.NODE_CHANNEL_FD !== undefined) return;
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...extra, ...process.argv.slice(1)]);
}
