import { describe, expect, it } from 'vitest';
import { createSealer } from './seal.ts';

const sealer = createSealer('s'.repeat(32), 'e'.repeat(24));

describe('sealed values', () => {
  it('round-trip and hide their content', () => {
    const sealed = sealer.seal('session', { email: 'alice@example.com' }, Date.now() + 1000);
    expect(sealed).not.toContain('alice');
    expect(Buffer.from(sealed, 'base64url').toString('latin1')).not.toContain('alice');
    expect(sealer.open('session', sealed)).toEqual({ email: 'alice@example.com' });
  });

  it('are refused for another purpose, after expiry, when altered, or under other keys', () => {
    const sealed = sealer.seal('state', { a: 1 }, Date.now() + 1000);
    expect(sealer.open('session', sealed)).toBeUndefined();
    expect(sealer.open('state', sealed, Date.now() + 2000)).toBeUndefined();
    const bytes = Buffer.from(sealed, 'base64url');
    bytes[20] = (bytes[20] as number) ^ 1;
    expect(sealer.open('state', bytes.toString('base64url'))).toBeUndefined();
    expect(createSealer('s'.repeat(32), 'f'.repeat(24)).open('state', sealed)).toBeUndefined();
    expect(createSealer('t'.repeat(32), 'e'.repeat(24)).open('state', sealed)).toBeUndefined();
    expect(sealer.open('state', undefined)).toBeUndefined();
    expect(sealer.open('state', 'not base64!')).toBeUndefined();
  });
});
