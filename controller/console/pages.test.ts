import { describe, expect, it } from 'vitest';
import { messagePage, signedInPage, signInPage } from './pages.ts';

/**
 * A page without an icon makes the browser ask the API host for /favicon.ico, which the console
 * answers 404: a console error on every such page (seen on the OAuth callback's hand-over page
 * whenever the browser fetched the icon before its refresh fired).
 */
describe('console pages', () => {
  const pages = {
    'sign-in': signInPage({ providers: ['dev'], csrf: 'c' }),
    message: messagePage('Not found', 'nothing here'),
    'signed-in hand-over': signedInPage(),
  };

  it.each(Object.entries(pages))('the %s page names its own icon', (_name, page) => {
    expect(page.text).toMatch(/<link rel="icon" href="data:," \/>/);
  });
});
