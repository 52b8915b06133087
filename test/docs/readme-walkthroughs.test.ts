import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../controller/harness.ts';
import { scenarioBlocks, splitBefore, type ShellBlock } from './blocks.ts';
import { until } from '../support/until.ts';
import { DocsRun } from './runner.ts';

/**
 * The README's walkthroughs, run as written (test/docs/runner.ts): every block whose fence says
 * `test=<scenario>` runs in order on its machine, a network namespace of its own, and what a
 * reader would look at is compared — status lines, printed URLs, what the shares answer.
 */
let run: DocsRun;

beforeAll(() => {
  run = new DocsRun(tempDir('svc-docs-'), ['five', 'remote', 'installation', 'laptop', 'second']);
});

afterAll(() => run?.close());

describe('README: five-minute walkthrough', { timeout: 120_000 }, () => {
  const blocks = scenarioBlocks('five-minute');

  beforeAll(() => run.writeFiles('five', { 'site/index.html': 'hello from ./site\n' }));

  it('has its three blocks', () => {
    expect(blocks.map((b) => b.file)).toEqual(['README.md', 'README.md', 'README.md']);
  });

  it('npm start: the frontend on 127.0.0.1:8080 with the dev login provider', async () => {
    const { stdout } = await run.next(blocks);
    expect(stdout).toContain('svc serve is ready');
    expect(stdout).toMatch(/shares at http:\/\/<token>\.svc\.localhost:8080/);
    expect(stdout).toMatch(/dev login: provider "dev"/);
  });

  it('svc share public prints the token and the URL; the share answers, the OAuth one sends to the login', async () => {
    const { stdout } = await run.next(blocks);
    const urls = [...stdout.matchAll(/^ {2}(http:\/\/([a-z0-9]+)\.svc\.localhost:8080)$/gm)];
    expect(urls).toHaveLength(2);
    const [open, guarded] = urls.map((m) => m[2] as string);
    expect(await run.curl('five', 'http://127.0.0.1:8080/', `${open}.svc.localhost:8080`)).toMatch(
      /^HTTP\/1\.[01] 200[^]*Directory listing for \//,
    );
    const login = await run.curl('five', 'http://127.0.0.1:8080/', `${guarded}.svc.localhost:8080`);
    expect(login).toMatch(/^HTTP\/1\.1 30[23]/);
    // The login runs through the dev provider's routes on the frontend's auth host.
    expect(login).toMatch(/^location: .*http(:\/\/|%3A%2F%2F)auth\.svc\.localhost(:|%3A)8080(\/|%2F)dev(\/|%2F)/im);
  });

  it('a folder, a private share through a local access, a health check, the status, unshare', async () => {
    const [shares, rest] = splitBefore(blocks.shift() as ShellBlock, 'npx svc agent share http-healthcheck');
    const { stdout: first } = await run.next([shares]);
    expect(await run.curl('five', 'http://127.0.0.1:9191/')).toMatch(/^HTTP\/1\.[01] 200[^]*Directory listing for \//);
    const stdout = first + (await run.next([rest])).stdout;
    const [web, priv] = [...stdout.matchAll(/^token: (\S+)$/gm)].map((m) => m[1] as string);
    expect(await run.curl('five', 'http://127.0.0.1:8080/', `${web}.svc.localhost:8080`)).toContain(
      'hello from ./site',
    );
    expect(stdout).toContain(`private share: reach it with \`svc access private ${priv}\``);
    expect(stdout).toContain('endpoint: http://127.0.0.1:9191');
    expect(stdout).toMatch(/^healthy$/m);
    expect(await run.curl('five', 'http://127.0.0.1:9191/')).toBe('');
    expect(stdout).toContain(`removed share ${priv}`);
  });
});

describe('README: remote control through the controller API', { timeout: 120_000 }, () => {
  const blocks = scenarioBlocks('remote-control');

  it('creates the identity, runs svc serve with remote control, and /agent/share answers with the share', async () => {
    const { stdout } = await run.next(blocks);
    expect(stdout).toMatch(/controller: http:\/\/127\.0\.0\.1:18080\/api\/v1/);
    const reply = JSON.parse(stdout.trim().split('\n').at(-1) as string) as {
      token: string;
      frontendEndpoints: string[];
    };
    expect(reply.frontendEndpoints).toEqual([`http://${reply.token}.svc.localhost:8080`]);
  });
});

describe('README: two machines through the installation', { timeout: 120_000 }, () => {
  const blocks = scenarioBlocks('two-machine');
  const api = () => `http://${run.address('installation')}:18080`;
  const rewrites = () => [['https://api.share.example.com', api()] as const];
  const shareHost = (token: string) => `${token}.share.example.com`;
  /** What the installation's frontend answers for a share, once the laptop's tunnel serves it. */
  const served = (token: string, text: string) =>
    until(async () => {
      const answer = await run.curl('installation', 'http://127.0.0.1:8080/', shareHost(token));
      return answer.includes(text) ? answer : undefined;
    }, `share ${token} through the installation`);

  beforeAll(() =>
    run.writeFiles('laptop', {
      'site/index.html': 'hello from the laptop folder\n',
      'db/index.html': 'the private service on 5432\n',
      'index.html': 'the laptop service on 3000\n',
    }),
  );

  it('the installation starts with remote control, and its banner names an address agents can use', async () => {
    const { stdout } = await run.next(blocks);
    expect(stdout).toContain('svc controller is ready (installation');
    expect(stdout).toMatch(new RegExp(`agents: +${api().replaceAll('.', '\\.')}/api/v1`));
    expect(stdout).not.toMatch(/agents: .*127\.0\.0\.1/);
  });

  it('the laptop enables, enrolls and shares; the installation serves its shares through the tunnel', async () => {
    const servers = 'python3 -m http.server 3000 >/dev/null 2>&1 & python3 -m http.server -d db 5432 >/dev/null 2>&1 &';
    expect((await run.sh('laptop', `${servers}\nsvc serve`)).code).toBe(0);
    const { stdout } = await run.next(blocks, { rewrites: rewrites() });
    expect(stdout).toMatch(/^enrolled/m);
    const [proxied, web] = [...stdout.matchAll(/^ {2}https:\/\/([a-z0-9]+)\.share\.example\.com$/gm)].map((m) => m[1]);
    expect(await served(proxied as string, 'the laptop service on 3000')).toMatch(/^HTTP\/1\.1 200/);
    expect(await served(web as string, 'hello from the laptop folder')).toMatch(/^HTTP\/1\.1 200/);
  });

  it('a second machine of the account reaches the private share through its local access', async () => {
    const enabled = await run.sh('second', `svc serve\nsvc enable "$TOKEN" --api-endpoint ${api()}`, 'two-machine');
    expect(enabled.code, enabled.stderr).toBe(0);
    const { stdout } = await run.next(blocks);
    expect(stdout).toContain('endpoint: http://127.0.0.1:9191');
    const answer = await until(async () => {
      const text = await run.curl('second', 'http://127.0.0.1:9191/');
      return text.includes('the private service on 5432') ? text : undefined;
    }, 'the access on the second machine');
    expect(answer).toMatch(/^HTTP\/1\.[01] 200/);
  });

  it('remote control through the installation answers with the installation URL', async () => {
    const { stdout } = await run.next(blocks, { rewrites: rewrites() });
    const reply = JSON.parse(stdout) as { token: string; frontendEndpoints: string[] };
    expect(reply.frontendEndpoints).toEqual([`https://${shareHost(reply.token)}`]);
    expect(await served(reply.token, 'the laptop service on 3000')).toMatch(/^HTTP\/1\.1 200/);
  });
});
