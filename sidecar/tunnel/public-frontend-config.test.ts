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

/** The problems of `doc`, read with `env` for the replicas' SVC_POD_* defaults (none by default). */
function problemsOf(doc: unknown, env: NodeJS.ProcessEnv = {}): readonly string[] {
  try {
    parsePublicFrontendConfig(doc, configPath, env);
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

  it('reads the ping settings: the timeout follows the interval unless set, and must be longer', () => {
    const tunnelOf = (tunnel: unknown) =>
      parsePublicFrontendConfig({ tunnel, controller: { url: 'http://c', credential_file: 'credential' } }, configPath)
        .tunnel;
    expect(tunnelOf({})).toMatchObject({ pingIntervalMs: 3_000, pingTimeoutMs: 8_000 });
    expect(tunnelOf({ ping_interval: '20s' })).toMatchObject({ pingIntervalMs: 20_000, pingTimeoutMs: 42_000 });
    expect(tunnelOf({ ping_interval: '1s', ping_timeout: '4s' })).toMatchObject({
      pingIntervalMs: 1_000,
      pingTimeoutMs: 4_000,
    });
    expect(
      problemsOf({
        tunnel: { ping_interval: '5s', ping_timeout: '5s' },
        controller: { url: 'http://c', credential_file: 'credential' },
      }),
    ).toEqual(['tunnel.ping_timeout: must be longer than tunnel.ping_interval (5000 ms), got 5000 ms']);
  });

  it('reads the transports agents may use: both by default, a clear problem for an unknown one', () => {
    const transportsOf = (tunnel: unknown) =>
      parsePublicFrontendConfig({ tunnel, controller: { url: 'http://c', credential_file: 'credential' } }, configPath)
        .tunnel.transports;
    expect(transportsOf({})).toEqual(['direct', 'websocket']);
    expect(transportsOf({ transports: ['websocket'] })).toEqual(['websocket']);
    expect(
      problemsOf({
        tunnel: { transports: ['websocket', 'quic'] },
        controller: { url: 'http://c', credential_file: 'credential' },
      }),
    ).toEqual(['tunnel.transports: must list only direct and websocket, got "quic"']);
  });

  it('reports every problem of every section with its field path', () => {
    expect(
      problemsOf({
        frontend: { listen: 'nowhere', domain: 'Not A Domain', endpoint_url: 'ftp://x' },
        tunnel: { max_streams_per_tunnel: 0 },
        controller: { url: 'http://c/api', credential_file: join(dir, 'absent'), token: 'x' },
        replicas: { lease_namespace: 'svc' },
      }),
    ).toEqual([
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
    ]);
    expect(problemsOf({ controller: {}, extra: 1 })[0]).toBe(
      'extra: unknown field (known: frontend, oauth, tunnel, controller, replicas)',
    );
    expect(problemsOf({})).toEqual(['controller: required']);
    expect(problemsOf({ controller: {} })).toEqual([
      'controller.url: required',
      'controller.credential_file: required',
    ]);
  });

  it('reads the replicas section: its values, else the SVC_POD_* variables the chart sets, else the defaults', () => {
    const controller = { url: 'http://c', credential_file: credentialFile };
    const env = { SVC_POD_NAMESPACE: 'svc', SVC_POD_NAME: 'svc-public-frontend-7d9f-x', SVC_POD_IP: '10.1.2.3' };
    expect(parsePublicFrontendConfig({ controller, replicas: {} }, configPath, env).replicas).toEqual({
      namespace: 'svc',
      podName: 'svc-public-frontend-7d9f-x',
      podIp: '10.1.2.3',
      peerListen: { host: '0.0.0.0', port: 8090 },
      leaseDurationMs: 15_000,
    });
    const written = parsePublicFrontendConfig(
      {
        controller,
        replicas: {
          namespace: 'frontends',
          pod_name: 'frontend-a',
          pod_ip: '127.0.0.1',
          peer_listen: '127.0.0.1:0',
          lease_duration: '2s',
        },
      },
      configPath,
      env,
    );
    expect(written.replicas).toEqual({
      namespace: 'frontends',
      podName: 'frontend-a',
      podIp: '127.0.0.1',
      peerListen: { host: '127.0.0.1', port: 0 },
      leaseDurationMs: 2_000,
    });
    expect(parsePublicFrontendConfig({ controller }, configPath, env).replicas).toBeUndefined();
  });

  it('reports a bad replicas.peer_listen with its field path together with the other problems', () => {
    expect(
      problemsOf(
        {
          frontend: { listen: 'nowhere' },
          controller: { url: 'http://c', credential_file: credentialFile },
          replicas: { peer_listen: '0.0.0.0:99999', lease_duration: '1500ms' },
        },
        { SVC_POD_NAMESPACE: 'svc', SVC_POD_NAME: 'frontend-a', SVC_POD_IP: 'not-an-ip' },
      ),
    ).toEqual([
      'frontend.listen: must be ip:port (for example 0.0.0.0:8080), got "nowhere"',
      'replicas.pod_ip (from $SVC_POD_IP): must be an IPv4 or IPv6 address, got "not-an-ip"',
      'replicas.peer_listen: must be ip:port (for example 0.0.0.0:8080), got "0.0.0.0:99999"',
      'replicas.lease_duration: must be whole seconds between 1s and 1h, got "1500ms"',
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
