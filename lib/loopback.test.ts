import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from './loopback.ts';

describe('isLoopbackHost', () => {
  it('accepts only names and addresses of this machine', () => {
    expect(['localhost', 'a.localhost', '127.0.0.2', '::1', '[::1]'].every(isLoopbackHost)).toBe(true);
    expect(['example.com', '10.0.0.1', 'localhost.example.com'].some(isLoopbackHost)).toBe(false);
  });
});
