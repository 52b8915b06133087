import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shareRecorder } from '../../agent/inspector/recorder.ts';
import { InspectorStore } from '../../agent/inspector/store.ts';
import { createLogger } from '../../lib/logger.ts';
import { staticShares } from '../../lib/share/source.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';

const DOMAIN = 'svc.test';

/** A backend answering every request with a short text. */
const backend = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`seen ${req.url}`));
});

function get(port: number, host: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    // A kept-alive connection of its own: one the frontend handed to Node's server stays there.
    const agent = new Agent({ keepAlive: true });
    const req = request({ host: '127.0.0.1', port, path, headers: { host }, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        agent.destroy();
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the request inspector in the frontend', () => {
  const store = new InspectorStore({ requests: 10, bodyBytes: 1024, memoryBytes: 1 << 20 });
  let frontend: RunningFrontend;
  beforeAll(async () => {
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const target = new URL(`http://127.0.0.1:${(backend.address() as AddressInfo).port}/`);
    frontend = await startFrontend({
      listen: { host: '127.0.0.1', port: 0 },
      endpointUrl: (port) => new URL(`http://${DOMAIN}:${port}`),
      domain: DOMAIN,
      shares: staticShares([
        { token: 'rec', instance: 'rec', target, recorder: shareRecorder('rec', store, undefined) },
        { token: 'plain', instance: 'plain', target },
      ]),
      logger: createLogger('inspector-frontend-test', { level: 'silent' }),
    });
  });
  afterAll(async () => {
    await frontend.close();
    backend.close();
  });

  it('records a plain GET, which the fast path takes', async () => {
    const reply = await get(frontend.port, `rec.${DOMAIN}:${frontend.port}`, '/page?q=1');
    expect(reply).toEqual({ status: 200, body: 'seen /page?q=1' });
    await new Promise((r) => setTimeout(r, 50));
    const [r] = store.list('rec');
    expect(r).toMatchObject({ method: 'GET', path: '/page?q=1', status: 200 });
    expect(r?.responseBody.kept.toString()).toBe('seen /page?q=1');
    // A share without a recorder: nothing of it is recorded. Both requests took the fast path.
    expect((await get(frontend.port, `plain.${DOMAIN}:${frontend.port}`, '/x')).status).toBe(200);
    expect(store.list('plain')).toHaveLength(0);
    expect(frontend.metrics.fastPathRequests.values()[0]?.value).toBe(2);
  });
});
