import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { startServe, type RunningServe } from '../../serve/serve.ts';
import { suiteFigures } from '../support/figures.ts';
import { request } from '../support/raw-http.ts';
import { uncaughtErrors } from '../support/uncaught.ts';

/**
 * The agent's page listens on a well-known loopback port (127.0.0.1:4040 by default), so any web
 * page the user opens can send it requests (`fetch('http://127.0.0.1:4040//', { mode: 'no-cors' })`
 * sends the path `//` as written). `new URL('//', base)` throws: read in the page's request
 * handler, that ended `svc serve` with every share and access of the machine. Such a target is
 * answered 400 and the page goes on.
 */
const figures = suiteFigures('agent-page-target');
const targets = figures.attackClass(
  "Request targets the agent's page cannot read as a URL (`//`, `//host:99999/`, `//[`)",
  'svc serve exited (new URL threw in the request handler): 400 now',
);
const uncaught = uncaughtErrors();
const TARGETS = ['//', '//x:99999/', '//[', '///?'];
let serve: RunningServe;
let port: number;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-page-target-'));
  const config = join(dir, 'serve.yaml');
  writeFileSync(config, 'frontend:\n  listen: 127.0.0.1:0\n  domain: svc.localhost\nui:\n  listen: 127.0.0.1:0\n');
  serve = await startServe({ config, dataDir: join(dir, 'data') }, createLogger('test', { level: 'silent' }));
  port = Number(new URL(serve.pageUrl as string).port);
});

afterAll(async () => {
  figures.write();
  await serve?.close();
});

it.each(TARGETS)('%s: 400, and the page still answers', (target) =>
  targets.run(async () => {
    const host = `127.0.0.1:${port}`;
    const reply = await request(port, target, { host, timeoutMs: 5_000 });
    expect(reply.status).toBe(400);
    expect(reply.body).toContain('not a path');
    expect((await request(port, '/', { host })).status).toBe(401);
    expect(uncaught).toEqual([]);
  }),
);
