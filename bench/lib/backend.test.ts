import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ResponseFramer } from '../../lib/fast-upstream/response-framer.ts';
import { startBackend, type BackendKind } from './backend.ts';
import { fixedBody } from './fixed-backend.ts';
import { stopAll } from './processes.ts';

/** Sends `count` GETs one after another on one connection; how many came back 200 with `body`, and whether it stayed open. */
async function sequentialGets(url: string, count: number, body: Buffer): Promise<{ ok: number; closed: boolean }> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  let ok = 0;
  let replies = 0;
  let closed = false;
  let framer = new ResponseFramer(false);
  let received: Buffer[] = [];
  const request = Buffer.from(`GET / HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`);
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => {
      closed = true;
      resolve();
    });
    socket.on('data', (chunk: Buffer) => {
      framer.feed(chunk, (data) => received.push(Buffer.from(data)));
      if (!framer.done) return;
      replies += 1;
      const reply = Buffer.concat(received).toString('latin1');
      if (framer.headParsed?.status === 200 && reply.endsWith(`\r\n\r\n${body.toString('latin1')}`)) ok += 1;
      if (framer.headParsed?.closes) return;
      if (replies === count) return resolve();
      framer = new ResponseFramer(false);
      received = [];
      socket.write(request);
    });
    socket.write(request);
  });
  socket.destroy();
  return { ok, closed };
}

describe('startBackend', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-backend-'));
  afterAll(async () => {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each<BackendKind>(['nginx', 'node'])(
    '%s answers the same body to every GET and keeps one connection open past 1,000 requests',
    async (kind) => {
      const backend = await startBackend(kind, join(dir, kind), 64);
      expect(backend.pid).toBeGreaterThan(0);
      const result = await sequentialGets(backend.url, 1_200, fixedBody(64));
      expect(result).toEqual({ ok: 1_200, closed: false });
    },
  );
});
