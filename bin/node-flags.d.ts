// Types of bin/node-flags.js (plain JavaScript: it runs before svc's TypeScript is loaded).

/** The commands whose process carries tunnel traffic. */
export declare const TUNNEL_COMMANDS: ReadonlySet<string>;
/** The Node flags those processes run with. */
export declare const TUNNEL_NODE_FLAGS: readonly string[];
/** The flags to add to Node's command line before running `argv` (the arguments after `bin/svc.js`). */
export declare function extraNodeFlags(argv: readonly string[], execArgv: readonly string[]): string[];
/** Replaces this process with Node running the same script with the command's extra flags, when there are any. */
export declare function reexecWithCommandFlags(): void;
