import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, problemText } from '../../lib/errors.ts';
import { DEFAULT_TUNNEL_LIMITS } from '../../lib/tunnel/protocol.ts';
import { parsePublicFrontendConfig } from './public-frontend-config.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-public-frontend-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const credentialFile = join(dir, 'credential');
writeFileSync(credentialFile, `  ${'k'.repeat(48)}  \n`);
const configPath = join(dir, 'public-frontend.yaml');

function problemsOf(doc: unknown): readonly string[] {
  try {
    parsePublicFrontendConfig(doc, configPath, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map(problemText);
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('svc public-frontend config', () => {
  it('reads frontend, tunnel and controller (credential trimmed, relative to the config file)', () => {
    const config = parsePublicFrontendConfig(
      {
        frontend: {
          listen: '0.0.0.0:8080',
          domain: 'share.example.com',
          endpoint_url: 'https://share.example.com',
          metrics_listen: '0.0.0.0:9090',
        },
        tunnel: { max_streams_per_tunnel: 50 },
        controller: { url: 'http://svc-controller.svc:80', credential_file: 'credential' },
      },
      configPath,
    );
    expect(config.frontend).toMatchObject({
      listen: { host: '0.0.0.0', port: 8080 },
      domain: 'share.example.com',
      metricsListen: { host: '0.0.0.0', port: 9090 },
    });
    expect(config.frontend.endpointUrl?.origin).toBe('https://share.example.com');
    expect(config.tunnel).toEqual({ ...DEFAULT_TUNNEL_LIMITS, maxStreamsPerTunnel: 50 });
    expect(config.controller.url.origin).toBe('http://svc-controller.svc');
    expect(config.controller).toMatchObject({ credentialFile: credentialFile, credential: 'k'.repeat(48) });
    expect(config.oauth).toBeUndefined();
  });

  it('reports every problem of every section with its field path', () => {
    expect(
      problemsOf({
        frontend: { listen: 'nowhere', domain: 'Not A Domain', endpoint_url: 'ftp://x' },
        tunnel: { max_streams_per_tunnel: 0 },
        controller: { url: 'http://c/api', credential_file: join(dir, 'absent'), token: 'x' },
        replicas: { lease_namespace: 'svc', peer_listen: 'anywhere' },
        extra: true,
      }),
    ).toEqual([
      'extra: unknown field (known: frontend, oauth, tunnel, controller, replicas)',
      'frontend.listen: must be ip:port (for example 0.0.0.0:8080), got "nowhere"',
      'frontend.domain: must be a DNS domain such as share.example.com, got "not a domain"',
      'frontend.endpoint_url: must be an http or https URL, got "ftp://x"',
      'tunnel.max_streams_per_tunnel: must be an integer between 1 and 10000, got 0',
      'controller.token: unknown field (known: url, credential_file)',
      'controller.url: must be a base URL without path, query, fragment or credentials',
      `controller.credential_file: cannot read ${join(dir, 'absent')} (ENOENT)`,
      'replicas.lease_namespace: unknown field (known: namespace, pod_name, pod_ip, peer_listen, lease_duration)',
      'replicas.namespace: required (or set $SVC_POD_NAMESPACE)',
      'replicas.pod_name: required (or set $SVC_POD_NAME)',
      'replicas.pod_ip: required (or set $SVC_POD_IP)',
      'replicas.peer_listen: must be ip:port (for example 0.0.0.0:8080), got "anywhere"',
    ]);
    expect(problemsOf({})).toEqual(['controller: required']);
    expect(problemsOf({ controller: {} })).toEqual([
      'controller.url: required',
      'controller.credential_file: required',
    ]);
  });

  it('with an oauth section, the listen address, domain and public URL come from it (frontend keys refused)', () => {
    expect(
      problemsOf({
        frontend: { domain: 'share.example.com' },
        oauth: { bind_address: '127.0.0.1:0' },
        controller: { url: 'http://c', credential_file: credentialFile },
      }),
    ).toEqual(
      expect.arrayContaining([
        'frontend.domain: comes from oauth.cookie_domain when an oauth section is present; remove it',
      ]),
    );
  });
});
