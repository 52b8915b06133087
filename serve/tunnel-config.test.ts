import { describe, expect, it } from 'vitest';
import { ConfigError, problemText } from '../lib/errors.ts';
import { DEFAULT_TUNNEL_LIMITS } from '../lib/tunnel/protocol.ts';
import { parseServeConfig } from './config.ts';

describe('the installation tunnel section', () => {
  it('is optional; its fields override the default limits', () => {
    expect(parseServeConfig({}).tunnel).toBeUndefined();
    const config = parseServeConfig({
      tunnel: { max_streams_per_tunnel: 20, max_tunnels_per_environment: 1, stream_idle_timeout: '30s' },
    });
    expect(config.tunnel).toEqual({
      ...DEFAULT_TUNNEL_LIMITS,
      maxStreamsPerTunnel: 20,
      maxTunnelsPerEnvironment: 1,
      streamIdleMs: 30_000,
    });
  });

  it('reports every bad field with its path', () => {
    let error: unknown;
    try {
      parseServeConfig({ tunnel: { max_streams_per_tunnel: 0, max_tunnels_per_environment: 'x', surprise: 1 } });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as ConfigError).problems.map(problemText).join('\n');
    expect(text).toContain('tunnel.max_streams_per_tunnel');
    expect(text).toContain('tunnel.max_tunnels_per_environment');
    expect(text).toContain('tunnel.surprise');
  });

  it('reads the per-share and per-account stream caps, a share cap above the account cap refused', () => {
    const config = parseServeConfig({ tunnel: { max_streams_per_share: 10, max_streams_per_account: 30 } });
    expect(config.tunnel).toMatchObject({ maxStreamsPerShare: 10, maxStreamsPerAccount: 30 });
    let error: unknown;
    try {
      parseServeConfig({ tunnel: { max_streams_per_share: 40, max_streams_per_account: 30 } });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map(problemText)).toEqual([
      'tunnel.max_streams_per_share: must not exceed tunnel.max_streams_per_account (30), got 40',
    ]);
  });
});
