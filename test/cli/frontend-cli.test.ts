import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const svc = (...args: string[]) =>
  spawnSync(process.execPath, [join(import.meta.dirname, '../../bin/svc.js'), ...args], {
    encoding: 'utf8',
    timeout: 20_000,
  });

function configFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'svc-cli-')), 'frontend.yaml');
  writeFileSync(path, text);
  return path;
}

const BROKEN = `
oauth:
  bind_address: "0.0.0.0"
  endpoint_url: "https://auth.example.com"
  cookie_name: "svc-auth-session"
  cookie_domain: "example.com"
  session_lifetime: "6 hours"
  intermediate_lifetime: "5m"
  signing_key: "too-short"
  encryption_key: "0123456789abcdef01234567"
  providers:
    - name: corp
      type: oidc
      client_id: id
      client_secret: secret
shares: []
`;

describe('svc config check / svc frontend', () => {
  it('lists every problem of a broken file and exits non-zero', () => {
    const result = svc('config', 'check', '--config', configFile(BROKEN));
    expect(result.status).toBe(1);
    for (const problem of [
      'oauth.bind_address: must be ip:port',
      'oauth.session_lifetime: must be a duration',
      'oauth.signing_key: must be at least 32 characters, got 9',
      'oauth.providers[0].scopes: required',
      'oauth.providers[0].issuer: required',
      'oauth.providers[0].supports_pkce: required',
    ]) {
      expect(result.stderr).toContain(problem);
    }
    expect(result.stderr).not.toContain('too-short');
  });

  it('refuses to start the frontend on an invalid file', () => {
    const result = svc('frontend', '--config', configFile(BROKEN));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('invalid configuration in');
  });

  it('says valid for a good file and reports unreadable or malformed files clearly', () => {
    const good = BROKEN.replace('"0.0.0.0"', '"127.0.0.1:0"')
      .replace('"6 hours"', '"6h"')
      .replace('"too-short"', '"0123456789abcdef0123456789abcdef-sign"')
      .replace(
        'client_secret: secret',
        'client_secret: secret\n      scopes: [openid, email]\n      issuer: https://idp.example.com\n      supports_pkce: true',
      );
    const ok = svc('config', 'check', '--config', configFile(good));
    expect(ok.stdout).toContain('valid (1 provider(s), 0 share(s))');
    expect(ok.status).toBe(0);
    const missing = svc('config', 'check', '--config', '/nonexistent/svc.yaml');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('cannot read configuration file /nonexistent/svc.yaml');
    const yaml = svc('config', 'check', '--config', configFile('oauth: [unclosed'));
    expect(yaml.status).toBe(1);
    expect(yaml.stderr).toContain('YAML syntax');
  });
});
