import { resolve } from 'node:path';
import { Option, type Command } from 'commander';
import type { ShareEntry } from '../agent/agent.ts';
import type { ShareRequest } from '../agent/share-request.ts';
import { BACKEND_MODES } from '../lib/share/spec.ts';
import { localClient, printJson, withLocalOptions, type LocalOptions } from './local.ts';

interface ShareOptions extends LocalOptions {
  backendMode: string;
  oauthProvider?: string;
  oauthEmailAddressPattern?: string[];
  oauthCheckInterval?: string;
  webListing?: boolean;
}

/** `svc share public|private <target>` and `svc unshare <token>` (seed: "Command-line operations"). */
export function registerShareCommands(program: Command): void {
  const share = program
    .command('share')
    .description('publish an HTTP service, a folder or (private only) a TCP service as a share on the local agent');

  const pub = share
    .command('public')
    .description(
      'create a public share, reachable through the public frontend; prints its token and frontend endpoint(s)',
    )
    .argument('<target>', 'proxy: the backend URL (http://127.0.0.1:3000); web: the folder to serve');
  addBackendOptions(pub);
  pub
    .option('--oauth-provider <name>', 'require a login with this configured provider')
    .option('--oauth-email-address-pattern <glob>', 'admit only emails matching this glob (repeatable)', collect)
    .option('--oauth-check-interval <duration>', 'how often the login is re-verified (default 3h)');
  withLocalOptions(pub).action((target: string, opts: ShareOptions) => createShare('public', target, opts));

  const priv = share
    .command('private')
    .description('create a private share, reachable only through `svc access private <token>`')
    .argument('<target>', 'proxy: the backend URL; web: the folder to serve; tcp: host:port (127.0.0.1:5432)');
  addBackendOptions(priv);
  withLocalOptions(priv).action((target: string, opts: ShareOptions) => createShare('private', target, opts));

  withLocalOptions(
    program
      .command('unshare')
      .description('remove a share (and every access to it)')
      .argument('<token>', 'share token'),
  ).action(async (token: string, opts: LocalOptions) => {
    const result = await localClient(opts).delete<{ removedAccesses: string[] }>(
      `/v1/shares/${encodeURIComponent(token)}`,
    );
    if (opts.json) return printJson({ token, ...result });
    process.stdout.write(`removed share ${token}\n`);
    for (const a of result.removedAccesses) process.stdout.write(`removed access ${a}\n`);
  });
}

/** Every mode is offered on both commands: the agent's one share validator refuses tcp on a public share. */
function addBackendOptions(command: Command): void {
  command
    .addOption(
      new Option(
        '--backend-mode <mode>',
        'proxy: forward to a URL; web: serve a folder; tcp (private only): relay TCP connections to host:port',
      )
        .choices([...BACKEND_MODES])
        .default('proxy'),
    )
    .option('--web-listing', 'web: list folders that have no index.html (off by default)');
}

async function createShare(shareMode: 'public' | 'private', target: string, opts: ShareOptions): Promise<void> {
  const body: ShareRequest = {
    shareMode,
    backendMode: opts.backendMode,
    // A folder is named relative to where the command runs; the agent needs it absolute.
    target: opts.backendMode === 'web' ? resolve(target) : target,
    ...(opts.oauthProvider !== undefined ? { oauthProvider: opts.oauthProvider } : {}),
    ...(opts.oauthEmailAddressPattern ? { oauthEmailAddressPatterns: opts.oauthEmailAddressPattern } : {}),
    ...(opts.oauthCheckInterval !== undefined ? { oauthCheckInterval: opts.oauthCheckInterval } : {}),
    ...(opts.webListing ? { webListing: true } : {}),
  };
  const entry = await localClient(opts).post<ShareEntry>('/v1/shares', body);
  if (opts.json) return printJson(entry);
  process.stdout.write(`token: ${entry.token}\n`);
  if (entry.frontendEndpoints.length > 0) {
    process.stdout.write(`frontend endpoints:\n${entry.frontendEndpoints.map((e) => `  ${e}\n`).join('')}`);
  } else {
    process.stdout.write(`private share: reach it with \`svc access private ${entry.token}\`\n`);
  }
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
