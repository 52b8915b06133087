import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SvcError } from '../lib/errors.ts';
import { createLogger } from '../lib/logger.ts';
import { LogCapture } from '../test/support/frontend.ts';
import type { Agent } from './agent.ts';
import { startLocalApi } from './local-api.ts';

describe('local API', () => {
  it("logs a failed request's error with its code and cause, and answers without them", async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const agent = {
      status: () => {
        throw new SvcError('agent_error', 'cannot read the agent state', { status: 500, cause: refused });
      },
    } as unknown as Agent;
    const logs = new LogCapture();
    const socketPath = join(mkdtempSync(join(tmpdir(), 'svc-local-api-')), 'agent.sock');
    const api = await startLocalApi(agent, socketPath, createLogger('agent-test', { destination: logs }));
    try {
      const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ socketPath, path: '/v1/status' }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(reply.status).toBe(500);
      expect(JSON.parse(reply.body)).toEqual({ error: 'cannot read the agent state', code: 'internal' });
      const line = logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.err);
      expect(line).toMatchObject({
        msg: 'local API request failed',
        route: 'GET /v1/status',
        err: {
          type: 'SvcError',
          code: 'agent_error',
          cause: { message: 'connect ECONNREFUSED 127.0.0.1:9', code: 'ECONNREFUSED' },
        },
      });
    } finally {
      await api.close();
    }
  });
});
