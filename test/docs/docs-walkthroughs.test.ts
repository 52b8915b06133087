import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../controller/harness.ts';
import { scenarioBlocks } from './blocks.ts';
import { DocsRun } from './runner.ts';

/**
 * The walkthroughs of docs/agent.md and docs/controller.md, run as written (test/docs/runner.ts),
 * each on a machine of its own (a network namespace: both use ports 8080 and 18080).
 */
let run: DocsRun;

beforeAll(() => {
  run = new DocsRun(tempDir('svc-docs-'), ['agent', 'ctl']);
});

afterAll(() => run?.close());

describe('docs/agent.md: five-minute walkthrough', { timeout: 120_000 }, () => {
  const blocks = scenarioBlocks('agent-walkthrough');

  beforeAll(() => run.writeFiles('agent', { 'site/index.html': 'hello from ./site\n' }));

  it('npm start runs svc serve --dev', async () => {
    expect((await run.next(blocks)).stdout).toMatch(/svc serve is ready[^]*dev login: provider "dev"/);
  });

  it('every command of the second terminal does what its comment says', async () => {
    const { stdout } = await run.next(blocks);
    const tokens = [...stdout.matchAll(/^token: (\S+)$/gm)].map((m) => m[1] as string);
    expect(tokens).toHaveLength(4);
    for (const token of tokens.slice(0, 3)) expect(stdout).toContain(`http://${token}.svc.localhost:8080`);
    const priv = tokens[3] as string;
    expect(stdout).toContain(`private share: reach it with \`svc access private ${priv}\``);
    expect(stdout).toContain('endpoint: http://127.0.0.1:9191');
    expect(stdout).toMatch(new RegExp(`^${priv} +private`, 'm'));
    expect(stdout).toMatch(/^healthy$/m);
    expect(stdout).toContain(`removed share ${priv}`);
    const web = tokens[1] as string;
    expect(await run.curl('agent', 'http://127.0.0.1:8080/', `${web}.svc.localhost:8080`)).toContain(
      'hello from ./site',
    );
  });
});

describe('docs/controller.md: set-up walkthrough and remote commands', { timeout: 120_000 }, () => {
  const blocks = scenarioBlocks('controller-setup');

  it('identity, svc serve with the controller, account, environment, enrollment', async () => {
    const { stdout } = await run.next(blocks);
    expect(stdout).toContain('controller: http://127.0.0.1:18080/api/v1');
    expect(stdout).toMatch(/^enrolled with enrollment token/m);
  });

  it('the remote commands answer as the comments show', async () => {
    const { stdout } = await run.next(blocks);
    // curl -s adds no newline: the answers arrive one after the other.
    const lines = stdout.trim().replaceAll(/}\s*{/g, '}\n{').split('\n');
    const shared = JSON.parse(lines[0] as string) as { token: string; frontendEndpoints: string[] };
    expect(shared.frontendEndpoints).toEqual([`http://${shared.token}.svc.localhost:8080`]);
    const status = JSON.parse(lines[1] as string) as { shares: { token: string }[]; accesses: null };
    expect(status.shares.map((s) => s.token)).toEqual([shared.token]);
    expect(JSON.parse(lines[2] as string)).toHaveProperty('healthy');
    expect(lines.slice(3)).toEqual(['{}', '{"shares":null,"accesses":null}']);
  });
});
