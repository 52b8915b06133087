import { describe, expect, it } from 'vitest';
import { EnvironmentPresence } from './presence.ts';

describe('EnvironmentPresence', () => {
  it('is online while a tunnel is attached and remembers when the last one closed', () => {
    const clock = { at: 1_000, now: () => clock.at };
    const presence = new EnvironmentPresence(clock);
    expect(presence.of('env1')).toBeUndefined();
    presence.connected('env1', '0.1.0');
    presence.connected('env1', undefined);
    clock.at = 5_000;
    presence.disconnected('env1');
    expect(presence.of('env1')).toEqual({ online: true, lastSeen: 5_000, agentVersion: '0.1.0' });
    clock.at = 9_000;
    presence.disconnected('env1');
    clock.at = 20_000;
    expect(presence.of('env1')).toEqual({ online: false, lastSeen: 9_000, agentVersion: '0.1.0' });
  });

  it('keeps only a version-shaped agent header', () => {
    const presence = new EnvironmentPresence();
    presence.connected('env1', '<script>');
    presence.connected('env2', ['1.0', '2.0']);
    presence.connected('env3', 'x'.repeat(100));
    for (const env of ['env1', 'env2', 'env3']) expect(presence.of(env)?.agentVersion).toBeUndefined();
  });
});
