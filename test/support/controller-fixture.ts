import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { api, startSvc, svcCli, tempDir, writeYaml, type Process } from '../controller/harness.ts';

/**
 * A controller and an enrolled agent as two real processes (`svc controller` and `svc serve`), the
 * way they run on two machines, with two accounts: alice owns the enrolled environment, bob an
 * environment of his own. The controller can be restarted on the same port, so the agent's
 * outbound connection has somewhere to come back to.
 */
export interface ControllerFixture {
  readonly base: string;
  readonly controllerDir: string;
  readonly agentDir: string;
  readonly apiBase: string;
  readonly apiUrl: string;
  readonly alice: string;
  readonly bob: string;
  readonly aliceEnv: string;
  readonly bobEnv: string;
  controller: Process;
  agent: Process;
  /** The agent's frontend port (for shares it serves). */
  agentFrontendPort(): number;
  startController(): Promise<Process>;
  startAgent(): Promise<Process>;
  /** Files the controller and the agent keep their state in, as bytes (to prove nothing changed). */
  state(): string;
  stop(): Promise<void>;
}

export async function startControllerFixture(prefix: string): Promise<ControllerFixture> {
  const base = tempDir(prefix);
  const controllerDir = join(base, 'controller');
  const agentDir = join(base, 'agent');
  const identity = await svcCli(['admin', 'create', 'identity', 'main', '--data-dir', controllerDir]);
  expect(identity.code).toBe(0);
  const configLines = (listen: string) => [
    `data_dir: ${controllerDir}`,
    'controller:',
    `  listen: ${listen}`,
    'agent_controller:',
    `  z_id: ${identity.stdout.trim()}`,
    `  identity_path: ${join(controllerDir, 'identities', 'main.json')}`,
  ];
  const config = writeYaml(join(base, 'controller.yaml'), configLines('127.0.0.1:0'));
  const ready = /api: +(http:\/\/\S+)\/api\/v1/;
  let controller = await startSvc(['controller', '--config', config], ready);
  const apiBase = (await controller.waitFor(ready))[1] as string;
  // Later starts use the same port: the enrolled agent dials the address it was enrolled with.
  writeYaml(config, configLines(new URL(apiBase).host));
  const account = async (email: string) =>
    (await svcCli(['admin', 'create', 'account', email, '--config', config])).stdout.trim();
  const [alice, bob] = [await account('alice@example.com'), await account('bob@example.com')];
  const enabled = await svcCli(['enable', alice, '--data-dir', agentDir], { env: { SVC_API_ENDPOINT: apiBase } });
  expect(enabled.code).toBe(0);
  const enrolled = await svcCli(['agent', 'enroll', '--yes', '--data-dir', agentDir]);
  expect(enrolled.code).toBe(0);
  const apiUrl = `${apiBase}/api/v1`;
  const bobEnv = (
    (await api(apiUrl, '/environment/enable', { description: 'bob' }, { token: bob })).body as {
      envZId: string;
    }
  ).envZId;
  const startAgent = () => startSvc(['serve', '--data-dir', agentDir, '--listen', '127.0.0.1:0'], /svc serve is ready/);
  let agent = await startAgent();
  await controller.waitFor(/remoting: agent connected/);

  const fixture: ControllerFixture = {
    base,
    controllerDir,
    agentDir,
    apiBase,
    apiUrl,
    alice,
    bob,
    aliceEnv: enabled.stdout.trim(),
    bobEnv,
    get controller() {
      return controller;
    },
    set controller(p) {
      controller = p;
    },
    get agent() {
      return agent;
    },
    set agent(p) {
      agent = p;
    },
    agentFrontendPort: () => Number(/listening on port (\d+)/.exec(agent.output())?.[1]),
    startController: async () => (controller = await startSvc(['controller', '--config', config], ready)),
    startAgent: async () => (agent = await startAgent()),
    state: () =>
      [join(controllerDir, 'controller.json'), join(agentDir, 'state.json')]
        .map((path) => {
          try {
            return readFileSync(path, 'utf8');
          } catch {
            return `${path}: absent`;
          }
        })
        .join('\n'),
    async stop() {
      await agent.stop();
      await controller.stop();
    },
  };
  return fixture;
}
