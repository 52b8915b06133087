/**
 * The auth endpoint's config as the operator writes it on a real API server: the config Secret
 * `svc-auth-frontend` and its shard Secrets, read back and laid out as the chart mounts them.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { AUTH_SHARDS, SHARD_KEY, shardSecretName } from '../../operator/auth-shards.ts';
import type { ControlPlane } from './envtest.ts';
import { RELEASE_NS, api, decodeSecret, getOrNone, paths, type Obj } from './operator-fixture.ts';

export const AUTH_SECRET = 'svc-auth-frontend';

/** A share entry of the auth endpoint's config (the frontend config's `shares:` format). */
export type AuthShareEntry = { token: string; target: string; instance?: string; oauth_provider?: string };

/** The shard Secrets that exist, by name (`svc-auth-frontend-shares-NN`). */
export async function authShardSecrets(cp: ControlPlane): Promise<Map<string, Obj>> {
  const list = (await api(cp, `/api/v1/namespaces/${RELEASE_NS}/secrets`)) as unknown as { items: Obj[] };
  const prefix = `${AUTH_SECRET}-shares-`;
  return new Map(list.items.filter((s) => s.metadata.name.startsWith(prefix)).map((s) => [s.metadata.name, s]));
}

/** Every share entry of every shard Secret. */
export async function authShareEntries(cp: ControlPlane): Promise<AuthShareEntry[]> {
  const shards = await authShardSecrets(cp);
  return [...shards.values()].flatMap((s) => parseYaml(decodeSecret(s, SHARD_KEY)) as AuthShareEntry[]);
}

/**
 * Writes the config Secret's `config.yaml` to `<dir>/frontend/` and each shard's `shares.yaml` to
 * `<dir>/auth-shares/shares-NN.yaml`, as the chart's volumes mount them (texts passed through
 * `rewrite`); returns the config file's path.
 */
export async function mountAuthConfig(
  cp: ControlPlane,
  dir: string,
  rewrite: (text: string) => string = (t) => t,
): Promise<string> {
  const secret = await api(cp, paths.secret(AUTH_SECRET, RELEASE_NS));
  await mkdir(join(dir, 'frontend'), { recursive: true });
  await mkdir(join(dir, 'auth-shares'), { recursive: true });
  const file = join(dir, 'frontend', 'config.yaml');
  await writeFile(file, rewrite(decodeSecret(secret, 'config.yaml')));
  for (let i = 0; i < AUTH_SHARDS; i++) {
    const shard = await getOrNone(cp, paths.secret(shardSecretName(AUTH_SECRET, i), RELEASE_NS));
    const name = `shares-${String(i).padStart(2, '0')}.yaml`;
    if (shard) await writeFile(join(dir, 'auth-shares', name), rewrite(decodeSecret(shard, SHARD_KEY)));
  }
  return file;
}
