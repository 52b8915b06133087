import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomicAsync } from '../lib/atomic-file.ts';
import { createLogger } from '../lib/logger.ts';
import { API_SHARE_FIELDS } from '../lib/share/surfaces.ts';
import { Agent } from './agent.ts';
import { FileStore, type StateWriter } from './file-store.ts';
import { API_REQUEST_FIELDS } from './requests.ts';
import type { SharePublisher } from './tunnel/publisher.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function agentWith(write: StateWriter): Promise<{ agent: Agent; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-agent-'));
  dirs.push(dir);
  const agent = new Agent({
    store: new FileStore(dir, { write }),
    logger: createLogger('agent-test', { level: 'silent' }),
    providerNames: [],
  });
  await agent.start();
  return { agent, dir };
}

const publicProxy = { shareMode: 'public', backendMode: 'proxy', target: 'http://127.0.0.1:1/' };

describe('Agent shares and the store', () => {
  it('lets concurrent shares share the store writes, each on disk once reported created', async () => {
    let writes = 0;
    const { agent, dir } = await agentWith((path, text) => {
      writes++;
      return writeFileAtomicAsync(path, text);
    });
    const entries = await Promise.all(Array.from({ length: 8 }, () => agent.share(publicProxy, API_SHARE_FIELDS)));
    expect(writes).toBeLessThan(8);
    const stored = (await new FileStore(dir).listShares()).map((s) => s.token).sort();
    expect(stored).toEqual(entries.map((e) => e.token).sort());
    await agent.close();
  });

  it('refuses a share whose store write fails and does not keep it', async () => {
    const { agent, dir } = await agentWith(() => Promise.reject(new Error('disk full')));
    await expect(agent.share(publicProxy, API_SHARE_FIELDS)).rejects.toMatchObject({ code: 'store_write_failed' });
    expect(agent.status().shares ?? []).toEqual([]);
    expect(await new FileStore(dir).listShares()).toEqual([]);
    await agent.close();
  });
});

describe('Agent and the installation its tunnel service is reaching', () => {
  /** The installation's registry as the agent sees it: it records what was published. */
  function installation(): SharePublisher & { published: string[] } {
    const published: string[] = [];
    return {
      published,
      providerNames: [],
      frontendEndpoints: (record) => [`https://${record.token}.share.example.com`],
      publish: (record) => {
        published.push(record.token);
        return Promise.resolve();
      },
      withdraw: () => Promise.resolve(),
      sync: () => Promise.resolve([]),
      lookupPrivate: () => Promise.reject(new Error('not used')),
    };
  }

  it('holds a share made right after svc enable until the installation is reached, and publishes it there', async () => {
    const { agent } = await agentWith(writeFileAtomicAsync);
    agent.expectPublisher();
    const made = agent.share(publicProxy, API_SHARE_FIELDS);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const registry = installation();
    await agent.usePublisher(registry);
    const entry = await made;
    expect(registry.published).toEqual([entry.token]);
    expect(entry.frontendEndpoints).toEqual([`https://${entry.token}.share.example.com`]);
    await agent.close();
  });

  it("answers an access to another machine's share, while the installation cannot be reached, with why", async () => {
    const { agent } = await agentWith(writeFileAtomicAsync);
    agent.expectPublisher();
    agent.publisherDelayed();
    await expect(agent.access('k3v9q2xw7mfa', undefined, API_REQUEST_FIELDS)).rejects.toMatchObject({
      code: 'installation_not_connected',
      status: 503,
    });
    await agent.usePublisher(undefined);
    await expect(agent.access('k3v9q2xw7mfa', undefined, API_REQUEST_FIELDS)).rejects.toMatchObject({
      code: 'unknown_share',
    });
    await agent.close();
  });
});
