import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { request } from '../../test/support/raw-http.ts';
import { listenHandler, type RunningListener } from './listener.ts';
import { decodeSegments, webBackend } from './web.ts';

const logger = createLogger('test', { level: 'silent' });
let base: string;
let root: string;
let plain: RunningListener;
let listing: RunningListener;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'svc-web-'));
  root = join(base, 'site');
  mkdirSync(join(root, 'docs'), { recursive: true });
  mkdirSync(join(root, 'empty'));
  mkdirSync(join(root, '.well-known'));
  writeFileSync(join(base, 'secret.txt'), 'outside the share');
  writeFileSync(join(root, 'index.html'), '<h1>home</h1>');
  writeFileSync(join(root, 'style.css'), 'body{}');
  writeFileSync(join(root, 'app.js'), 'export {}');
  writeFileSync(join(root, 'data.json'), '{}');
  writeFileSync(join(root, 'blob.unknownext'), 'bytes');
  writeFileSync(join(root, 'docs', 'a b.txt'), 'spaced');
  writeFileSync(join(root, 'empty', '<x>.txt'), 'x');
  writeFileSync(join(root, '.env'), 'SECRET=1');
  writeFileSync(join(root, 'docs', '.hidden'), 'h');
  writeFileSync(join(root, '.well-known', 'security.txt'), 'contact');
  symlinkSync(join(base, 'secret.txt'), join(root, 'escape.txt'));
  symlinkSync(base, join(root, 'escape-dir'));
  symlinkSync(join(root, 'style.css'), join(root, 'inside-link.css'));
  plain = await listenHandler(webBackend({ root, logger }), { host: '127.0.0.1', port: 0 });
  listing = await listenHandler(webBackend({ root, logger, listing: true }), { host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await plain.close();
  await listing.close();
  rmSync(base, { recursive: true, force: true });
});

describe('web backend', () => {
  it('serves files with their content types', async () => {
    const cases: [string, string, string][] = [
      ['/', 'text/html; charset=utf-8', '<h1>home</h1>'],
      ['/index.html', 'text/html; charset=utf-8', '<h1>home</h1>'],
      ['/style.css', 'text/css; charset=utf-8', 'body{}'],
      ['/app.js', 'text/javascript; charset=utf-8', 'export {}'],
      ['/data.json', 'application/json', '{}'],
      ['/blob.unknownext', 'application/octet-stream', 'bytes'],
      ['/docs/a%20b.txt', 'text/plain; charset=utf-8', 'spaced'],
      ['/inside-link.css', 'text/css; charset=utf-8', 'body{}'],
      ['/.well-known/security.txt', 'text/plain; charset=utf-8', 'contact'],
    ];
    for (const [path, type, body] of cases) {
      const reply = await request(plain.port, path);
      expect({ path, status: reply.status, type: reply.headers['content-type'], body: reply.body }).toEqual({
        path,
        status: 200,
        type,
        body,
      });
      expect(reply.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('refuses path traversal in every encoding and never serves a file outside the folder', async () => {
    const attempts = [
      '/../secret.txt',
      '/docs/../../secret.txt',
      '/%2e%2e/secret.txt',
      '/%2e%2e%2fsecret.txt',
      '/..%2fsecret.txt',
      '/%2E%2E%2Fsecret.txt',
      '/.%2e/secret.txt',
      '/%252e%252e/secret.txt',
      '/%252e%252e%252fsecret.txt',
      '/..\\secret.txt',
      '/..%5csecret.txt',
      '/%5c..%5csecret.txt',
      '/docs%2f..%2f..%2fsecret.txt',
      '/secret.txt%00.html',
      '/%c0%ae%c0%ae/secret.txt',
      '/escape.txt',
      '/escape-dir/secret.txt',
      '//..//secret.txt',
    ];
    for (const path of attempts) {
      const reply = await request(plain.port, path);
      expect(reply.status, path).toBeGreaterThanOrEqual(400);
      expect(reply.body, path).not.toContain('outside the share');
    }
  });

  it('does not serve hidden files', async () => {
    expect((await request(plain.port, '/.env')).status).toBe(404);
    expect((await request(plain.port, '/%2eenv')).status).toBe(404);
  });

  it('answers HEAD without a body and refuses other methods', async () => {
    const head = await request(plain.port, '/style.css', { method: 'HEAD' });
    expect([head.status, head.headers['content-length'], head.body]).toEqual([200, '6', '']);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const reply = await request(plain.port, '/style.css', { method, body: method === 'DELETE' ? undefined : 'x' });
      expect([method, reply.status, reply.headers.allow]).toEqual([method, 405, 'GET, HEAD']);
    }
  });

  it('answers a revalidation with 304', async () => {
    const first = await request(plain.port, '/style.css');
    const again = await request(plain.port, '/style.css', {
      headers: { 'if-none-match': first.headers.etag as string },
    });
    expect(again.status).toBe(304);
  });

  it('redirects a folder without a trailing slash, and lists folders only when opted in', async () => {
    const redirect = await request(plain.port, '/docs?x=1');
    expect([redirect.status, redirect.headers.location]).toEqual([301, './docs/?x=1']);
    expect((await request(plain.port, '/docs/')).status).toBe(404);
    expect((await request(plain.port, '/empty/')).status).toBe(404);
    const listed = await request(listing.port, '/empty/');
    expect(listed.status).toBe(200);
    expect(listed.body).toContain('&#60;x&#62;.txt');
    expect(listed.body).not.toContain('<x>');
    const top = await request(listing.port, '/');
    expect(top.body).toBe('<h1>home</h1>');
  });

  it('does not list hidden entries', async () => {
    const listed = await request(listing.port, '/docs/');
    expect(listed.body).toContain('a b.txt');
    expect(listed.body).not.toContain('.hidden');
    expect((await request(listing.port, '/docs/.hidden')).status).toBe(404);
  });
});

describe('web backend with a path secret', () => {
  it('serves only requests under the secret first segment, with the segment removed', async () => {
    const running = await listenHandler(webBackend({ root, logger, pathSecret: 's3cr3t' }), {
      host: '127.0.0.1',
      port: 0,
    });
    try {
      expect((await request(running.port, '/s3cr3t/style.css')).body).toBe('body{}');
      expect((await request(running.port, '/s3cr3t/')).body).toBe('<h1>home</h1>');
      expect((await request(running.port, '/s3cr3t/docs')).headers.location).toBe('./docs/');
      for (const path of ['/', '/style.css', '/s3cr3t', '/other/style.css', '/s3cr3t/../style.css']) {
        expect((await request(running.port, path)).status, path).toBeGreaterThanOrEqual(400);
      }
    } finally {
      await running.close();
    }
  });
});

describe('web backend with its folder gone', () => {
  it('answers 404 until the folder is back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-web-gone-'));
    const folder = join(dir, 'www');
    const running = await listenHandler(webBackend({ root: folder, logger }), { host: '127.0.0.1', port: 0 });
    try {
      expect((await request(running.port, '/')).status).toBe(404);
      mkdirSync(folder);
      writeFileSync(join(folder, 'index.html'), 'back');
      expect((await request(running.port, '/')).body).toBe('back');
    } finally {
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('decodeSegments', () => {
  it('decodes once and refuses dot segments, slashes, backslashes and NUL', () => {
    expect(decodeSegments('/a/b%20c/')).toEqual(['a', 'b c']);
    expect(decodeSegments('/%252e%252e')).toEqual(['%2e%2e']);
    for (const bad of ['/..', '/%2e%2e', '/a%2fb', '/a\\b', '/a%5cb', '/a%00', '/%zz', 'relative']) {
      expect(decodeSegments(bad), bad).toBeUndefined();
    }
  });
});
