import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../controller/harness.ts';
import { startControllerFixture, type ControllerFixture } from '../support/controller-fixture.ts';
import { suiteFigures } from '../support/figures.ts';
import { echoBackend, request } from '../support/raw-http.ts';

/**
 * The controller and an enrolled agent killed (SIGKILL: no goodbye) and started again, as real
 * processes. The agent keeps retrying with growing pauses while the controller is away and
 * reconnects by itself; remote commands work again and nothing the API acknowledged is lost.
 */
const figures = suiteFigures('remoting-restart');
let fx: ControllerFixture;
let backend: Awaited<ReturnType<typeof echoBackend>>;
let shareToken: string;

beforeAll(async () => {
  backend = await echoBackend();
  fx = await startControllerFixture('svc-fault-remoting-');
  const shared = await api(
    fx.apiUrl,
    '/agent/share',
    { envZId: fx.aliceEnv, shareMode: 'public', backendMode: 'proxy', target: backend.url },
    { token: fx.alice },
  );
  expect(shared.status).toBe(200);
  shareToken = (shared.body as { token: string }).token;
}, 120_000);

afterAll(async () => {
  figures.write();
  await fx?.stop();
  await backend?.close();
});

const status = () => api(fx.apiUrl, '/agent/status', { envZId: fx.aliceEnv }, { token: fx.alice });

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGKILL');
  await exited;
}

/** Times (ms since epoch) of the agent's log lines matching `message`, from its JSON logs. */
function logTimes(output: string, message: string, after: number): number[] {
  return output
    .split('\n')
    .filter((l) => l.includes(message))
    .map((l) => (JSON.parse(l) as { time: number }).time)
    .filter((t) => t > after);
}

describe('controller killed and restarted', () => {
  it('the agent retries with growing pauses, reconnects, and remote commands work again with the share still there', async () => {
    const killedAt = Date.now();
    await killed(fx.controller.child);
    await new Promise((r) => setTimeout(r, 8_000));
    const retries = logTimes(fx.agent.output(), 'connection to the controller failed; retrying', killedAt);
    const restartedAt = Date.now();
    await fx.startController();
    await fx.agent.waitFor(/remoting: connected to the controller[^]*remoting: connected to the controller/, 60_000);
    const reconnectMs =
      logTimes(fx.agent.output(), 'remoting: connected to the controller', restartedAt)[0]! - restartedAt;

    const gaps = retries.slice(1).map((t, i) => t - (retries[i] as number));
    expect(retries.length).toBeGreaterThanOrEqual(3);
    expect(retries.length).toBeLessThanOrEqual(10);
    expect(gaps.at(-1)).toBeGreaterThan(gaps[0] as number);

    const after = await status();
    expect(after.status).toBe(200);
    expect((after.body as { shares: { token: string }[] }).shares.map((s) => s.token)).toEqual([shareToken]);
    const check = await api(
      fx.apiUrl,
      '/agent/share/http-healthcheck',
      { envZId: fx.aliceEnv, shareToken, httpVerb: 'GET', endpoint: '/', expectedHttpResponse: 200 },
      { token: fx.alice },
    );
    expect(check.body).toEqual({ healthy: true });
    figures.fault({
      fault: 'Controller killed (SIGKILL) for 8 s and restarted',
      injections: 1,
      outcome: `agent retried ${retries.length} times with pauses growing ${gaps.map((g) => `${(g / 1000).toFixed(1)}`).join(' → ')} s, reconnected ${(reconnectMs / 1000).toFixed(1)} s after the restart; status and health check work; the share is still listed`,
      lost: 0,
    });
  }, 120_000);
});

describe('agent killed and restarted', () => {
  it('the API answers 502 agent_unreachable while it is away (no hang), then works again with the share restored', async () => {
    await killed(fx.agent.child);
    const away = await status();
    expect(away.status).toBe(502);
    expect(away.body).toMatchObject({ code: 'agent_unreachable' });
    await fx.startAgent();
    await fx.agent.waitFor(/remoting: connected to the controller/);
    const back = await status();
    expect(back.status).toBe(200);
    expect((back.body as { shares: { token: string }[] }).shares.map((s) => s.token)).toEqual([shareToken]);
    const served = await request(fx.agentFrontendPort(), '/', {
      host: `${shareToken}.svc.localhost:${fx.agentFrontendPort()}`,
    });
    expect(served.status).toBe(200);
    figures.fault({
      fault: 'Agent killed (SIGKILL) and restarted',
      injections: 1,
      outcome:
        'API answered 502 agent_unreachable while it was away; after the restart it reconnected, the share was restored from its store and served',
      lost: 0,
    });
  }, 120_000);
});
