import type * as Http from 'node:http';

/**
 * node:http's functions, taken from its CommonJS exports. An ESM `import … from 'node:http'`
 * (default, named or dynamic) builds a namespace from every export, and Node 24's http exports
 * WebSocket, CloseEvent and MessageEvent as getters into its bundled undici: reading them loads
 * undici with node:tls, node:http2 and node:zlib (memory: 17 MiB of RSS in a bare process, 7.0 MiB
 * in the frontend, docs/benchmarks-history.md "Frontend memory") in a process that may never
 * call fetch. Types still come from `import type … from 'node:http'`; test/structure.test.ts refuses
 * any other value import of node:http in the product folders. (node:https and node:http2 have no
 * such getters: importing them loads node:tls, not undici.)
 */
const http: typeof Http = process.getBuiltinModule('node:http');

export const { Agent, createServer, request, STATUS_CODES } = http;
/** The class's instance type, so that `Agent` from here names both, as node:http's does. */
export type Agent = Http.Agent;
