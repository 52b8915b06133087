import { request } from 'node:http';
import type { DownloadResult } from './download.ts';

const CHUNK = Buffer.alloc(64 * 1024, 'u');

/**
 * One bulk POST of `bytes` on a fresh connection, written in 64 KiB chunks under back-pressure (the
 * writer is never the limit), timed from sending the request to the end of the response. Connects to
 * 127.0.0.1 at the URL's port with the URL's host in the Host header, like `download`. Rejects on a
 * non-200 status. The backend (bench/lib/fixed-backend.ts) drains the body before it answers.
 */
export function upload(url: URL, bytes: number, timeoutMs = 120_000): Promise<DownloadResult> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const req = request(
      {
        host: '127.0.0.1',
        port: url.port || 80,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { host: url.host, 'content-length': String(bytes) },
        setHost: false,
        agent: false,
        timeout: timeoutMs,
      },
      (res) => {
        res.resume();
        res.once('error', reject);
        res.once('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`POST ${url.href}: status ${res.statusCode}`));
          const seconds = (performance.now() - start) / 1000;
          resolve({ bytes, seconds, mibPerSecond: bytes / 2 ** 20 / seconds });
        });
      },
    );
    req.once('timeout', () => req.destroy(new Error(`POST ${url.href}: no progress within ${timeoutMs} ms`)));
    req.once('error', reject);
    let left = bytes;
    const pump = (): void => {
      while (left > 0) {
        const chunk = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
        left -= chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}
