import { createHash, randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../lib/clock.ts';
import { bindCookieName, cookieValue, serializeCookie } from './cookies.ts';
import type { Session } from './session.ts';
import type { KeyRing, ShareIdentity } from './share-keys.ts';
import { parsePart, partText } from './share-parts.ts';
import { localSharedState, type SharedState } from './shared-state.ts';

/** What a hand-over ticket carries from the endpoint host's callback to the share host. */
interface HandOverTicket {
  readonly id: string;
  readonly share: string;
  readonly instance: string;
  /** SHA-256 (base64url) of the binding cookie of the browser that started the login. */
  readonly bind: string;
  /** Path and query on the share host to return to. */
  readonly path: string;
  readonly session: Session;
}

/** A hand-over is a redirect followed at once: good for a minute at most. */
const HANDOVER_LIFETIME_MS = 60_000;

/** What a sealer opens at most (sidecar/seal.ts). */
const MAX_TICKET_CHARS = 8192;

/** A binding value: 32 random bytes, base64url. */
const BIND_VALUE = /^[A-Za-z0-9_-]{43}$/;

/** The binding cookie a share host sets when it starts a login, and the digest its start ticket carries. */
export interface Binding {
  readonly digest: string;
  readonly setCookie: string;
}

/** A hand-over accepted (the session to set, where to go), or refused with a reason. */
export type HandOverResult =
  { readonly session: Session; readonly path: string } | { readonly refused: string; readonly path?: string };

/** The digest of a binding value, as start ticket, login state and hand-over carry it. */
export function bindDigest(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

/**
 * Binds a login's session to the browser that started it on the share host. Every share lives under
 * the cookie domain and its pages are its owner's code, so the session cookie is the share host's
 * own (host-only, `__Host-` under https): the endpoint host's callback cannot set it, and hands the
 * session over instead, through the share host's `/<provider>/auth/handover?ticket=…`. The ticket is
 * sealed under the share's keys (share, instance, session, binding digest; a minute at most) and is
 * accepted once, and only with the binding cookie whose digest it names: the share host set that
 * cookie (host-only, `__Host-<cookie_name>-bind` under https) in the browser that started the login,
 * so an attacker's own hand-over link opened in a visitor's browser sets nothing.
 */
export class HandOvers {
  readonly bindName: string;
  private readonly keys: KeyRing;
  private readonly secure: boolean;
  private readonly lifetimeMs: number;
  private readonly clock: Clock;
  private readonly replay: Pick<SharedState, 'claimLogin'>;

  constructor(
    keys: KeyRing,
    cookieName: string,
    secure: boolean,
    lifetimeMs: number,
    clock: Clock = systemClock,
    replay: Pick<SharedState, 'claimLogin'> = localSharedState(clock),
  ) {
    this.keys = keys;
    this.bindName = bindCookieName(cookieName, secure);
    this.secure = secure;
    this.lifetimeMs = lifetimeMs;
    this.clock = clock;
    this.replay = replay;
  }

  /**
   * The share host's binding for a login it starts: the browser's binding cookie when it holds a
   * well-formed one (another tab's login under way keeps working), else a new random one.
   */
  bind(cookieHeader: string | undefined): Binding {
    const held = cookieValue(cookieHeader, this.bindName);
    const value = held !== undefined && BIND_VALUE.test(held) ? held : randomBytes(32).toString('base64url');
    const maxAgeSeconds = Math.ceil(this.lifetimeMs / 1000);
    return { digest: bindDigest(value), setCookie: serializeCookie(this.bindName, value, this.cookie(maxAgeSeconds)) };
  }

  /** Set-Cookie expiring the binding cookie (after a hand-over accepted). */
  clearBind(): string {
    return serializeCookie(this.bindName, '', this.cookie(0));
  }

  /** The endpoint host's half: the session handed to the share host, for the browser bound by `bind`. */
  ticket(session: Session, bind: string, path: string): string {
    const share = { token: session.share, instance: session.instance };
    const sealer = this.keys.sealerFor(share);
    if (!sealer) throw new Error(`this frontend holds no keys for share ${share.token}`);
    const id = randomBytes(16).toString('base64url');
    const ticket: HandOverTicket = { id, share: share.token, instance: share.instance, bind, path, session };
    const sealed = sealer.seal('handover', ticket, this.clock.now() + HANDOVER_LIFETIME_MS);
    if (sealed.length > MAX_TICKET_CHARS) throw new Error(`the hand-over would be ${sealed.length} characters long`);
    return partText({ token: share.token, sealed });
  }

  /** The share host's half: opens a ticket for this share and checks it against the browser's binding cookie. */
  async accept(
    ticketParam: string | undefined,
    cookieHeader: string | undefined,
    share: ShareIdentity,
  ): Promise<HandOverResult> {
    const part = parsePart(ticketParam);
    const sealer = part?.token === share.token ? this.keys.sealerFor(share) : undefined;
    const ticket = part && sealer?.open<HandOverTicket>('handover', part.sealed);
    if (!ticket || ticket.share !== share.token || ticket.instance !== share.instance)
      return { refused: 'the sign-in link is invalid or expired, or is for another share' };
    const session = ticket.session;
    if (session.share !== share.token || session.instance !== share.instance)
      return { refused: 'the sign-in link is for another share' };
    const held = cookieValue(cookieHeader, this.bindName);
    if (held === undefined || bindDigest(held) !== ticket.bind)
      return { refused: 'the sign-in link was made for another browser', path: ticket.path };
    if (!(await this.replay.claimLogin(`handover:${ticket.id}`, this.clock.now() + HANDOVER_LIFETIME_MS)))
      return { refused: 'the sign-in link was already used', path: ticket.path };
    return { session, path: ticket.path };
  }

  private cookie(maxAgeSeconds: number): { secure: boolean; maxAgeSeconds: number } {
    return { secure: this.secure, maxAgeSeconds };
  }
}

/**
 * The paths an OAuth share's host keeps from its backend, for the share's own provider:
 * `/<provider>/auth/handover` (the session set after a login) and `/<provider>/logout` (the share
 * host's cookie is its own, so it is cleared there). Undefined for every other path.
 */
export function shareAuthPath(url: string, provider: string): 'handover' | 'logout' | undefined {
  if (url.charCodeAt(1) !== provider.charCodeAt(0) || !url.startsWith(`/${provider}/`)) return undefined;
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (path === `/${provider}/auth/handover`) return 'handover';
  return path === `/${provider}/logout` ? 'logout' : undefined;
}
