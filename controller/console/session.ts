import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { systemClock, type Clock } from '../../lib/clock.ts';
import { consoleCookie, type ConsoleCookie } from './cookies.ts';

/** What the console seals into cookies and the OAuth `state` (the frontend's sealer, sidecar/seal.ts). */
export interface ConsoleSealer {
  seal(purpose: 'session' | 'state' | 'login', payload: object, expiresAtMs: number): string;
  open<T>(purpose: 'session' | 'state' | 'login', sealed: string | undefined): T | undefined;
}

/** A signed-in browser. Held only in its sealed cookie, plus the ids signed out before their end. */
export interface ConsoleSession {
  readonly id: string;
  /** The account whose environments the console shows; absent for an admin without an account. */
  readonly accountId?: string;
  readonly email: string;
  readonly admin: boolean;
  /** `token`, or the provider's name. */
  readonly via: string;
  readonly expiresAt: number;
}

/** Signed-out sessions remembered at once; past that the oldest are forgotten (they expire anyway). */
const MAX_SIGNED_OUT = 10_000;

/**
 * The console's sessions: a sealed cookie (AES-GCM + HMAC under keys derived for the console alone),
 * never readable by script, never sent cross-site. Signing out remembers the session's id until its
 * end, so a copy of the cookie stops working too.
 */
export class ConsoleSessions {
  readonly cookie: ConsoleCookie;
  private readonly sealer: ConsoleSealer;
  private readonly lifetimeMs: number;
  private readonly clock: Clock;
  private readonly signedOut = new Map<string, number>();

  constructor(sealer: ConsoleSealer, options: { secure: boolean; lifetimeMs: number; clock?: Clock }) {
    this.sealer = sealer;
    this.cookie = consoleCookie('svc-console', options.secure);
    this.lifetimeMs = options.lifetimeMs;
    this.clock = options.clock ?? systemClock;
  }

  /** The request's current session, or undefined (none, forged, expired or signed out). */
  read(req: IncomingMessage): ConsoleSession | undefined {
    const session = this.sealer.open<ConsoleSession>('session', this.cookie.read(req));
    if (!session || session.expiresAt <= this.clock.now() || this.signedOut.has(session.id)) return undefined;
    return session;
  }

  /** A new session and its Set-Cookie. */
  start(fields: Omit<ConsoleSession, 'id' | 'expiresAt'>): { session: ConsoleSession; setCookie: string } {
    const expiresAt = this.clock.now() + this.lifetimeMs;
    const session: ConsoleSession = { ...fields, id: randomToken(), expiresAt };
    const sealed = this.sealer.seal('session', session, expiresAt);
    return { session, setCookie: this.cookie.set(sealed, this.lifetimeMs / 1000) };
  }

  /** Ends `session` here and returns the Set-Cookie that removes it from the browser. */
  end(session: ConsoleSession): string {
    const now = this.clock.now();
    for (const [id, until] of this.signedOut) if (until <= now) this.signedOut.delete(id);
    if (this.signedOut.size >= MAX_SIGNED_OUT) this.signedOut.delete(this.signedOut.keys().next().value as string);
    this.signedOut.set(session.id, session.expiresAt);
    return this.cookie.clear();
  }
}

/** 32 random bytes, base64url. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}
