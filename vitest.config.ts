import { defineConfig } from 'vitest/config';

// Unit tests live beside the code; integration and end-to-end tests under test/. Both run on every
// `npm test`: the integration suites start real servers (oidc-provider, Chromium, kube-apiserver).
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Scratch directories of the whole run live under one TMPDIR, removed at its end.
    globalSetup: ['test/run-tmpdir.ts'],
    pool: 'forks',
    maxWorkers: 2,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
