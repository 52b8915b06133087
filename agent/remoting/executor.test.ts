import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../lib/logger.ts';
import { API_SHARE_FIELDS } from '../../lib/share/surfaces.ts';
import { runExecutorContract } from '../../test/contracts/remote-executor.ts';
import { Agent } from '../agent.ts';
import { FileStore } from '../file-store.ts';
import { agentExecutor } from './executor.ts';

/** The single-machine agent's executor: a real Agent with its file store in a temporary directory. */
runExecutorContract('agentExecutor (single-machine agent)', async ({ backendUrl }) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-executor-'));
  const agent = new Agent({
    store: new FileStore(join(dir, 'data')),
    logger: createLogger('executor-contract', { level: 'silent' }),
    providerNames: ['dev'],
  });
  await agent.start();
  const create = async (shareMode: string, backendMode: string, target: string) =>
    (await agent.share({ shareMode, backendMode, target }, API_SHARE_FIELDS)).token;
  const shares = {
    publicProxy: await create('public', 'proxy', backendUrl),
    privateProxy: await create('private', 'proxy', backendUrl),
    web: await create('public', 'web', mkdtempSync(join(dir, 'site-'))),
  };
  return {
    executor: agentExecutor(agent),
    shares,
    close: async () => {
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
