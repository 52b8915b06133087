import { request } from 'node:http';

export interface DownloadResult {
  readonly bytes: number;
  readonly seconds: number;
  /** MiB per second, from sending the request to the last byte. */
  readonly mibPerSecond: number;
}

/**
 * One bulk GET on a fresh connection, the body counted and dropped as it arrives (the reader is
 * never the limit). Connects to 127.0.0.1 at the URL's port with the URL's host in the Host header,
 * like bench/lib/http.ts. Rejects on a non-200 status or a body shorter than `expectedBytes`.
 */
export function download(url: URL, expectedBytes: number, timeoutMs = 120_000): Promise<DownloadResult> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let bytes = 0;
    const req = request(
      {
        host: '127.0.0.1',
        port: url.port || 80,
        path: `${url.pathname}${url.search}`,
        headers: { host: url.host },
        setHost: false,
        agent: false,
        timeout: timeoutMs,
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET ${url.href}: status ${res.statusCode}`));
          return;
        }
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.once('error', reject);
        res.once('end', () => {
          if (bytes !== expectedBytes) {
            reject(new Error(`GET ${url.href}: ${bytes} bytes, expected ${expectedBytes}`));
            return;
          }
          const seconds = (performance.now() - start) / 1000;
          resolve({ bytes, seconds, mibPerSecond: bytes / 2 ** 20 / seconds });
        });
      },
    );
    req.once('timeout', () => req.destroy(new Error(`GET ${url.href}: no progress within ${timeoutMs} ms`)));
    req.once('error', reject);
    req.end();
  });
}
