/**
 * The largest response head a share's backend may send, on Node's path (its client's
 * `maxHeaderSize`, set explicitly so that a `--max-http-header-size` flag cannot move one path
 * alone) and on the fast path (lib/fast-upstream/response-framer.ts), which counts it as Node's
 * parser does: a larger one is answered 502 on both.
 */
export const MAX_RESPONSE_HEAD_BYTES = 16 * 1024;
