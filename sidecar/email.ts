import type { ShareOAuth } from '../lib/share/spec.ts';
import type { Identity } from './providers/types.ts';

/** A domain: dot-separated labels of letters, digits and inner hyphens (IDN labels in Unicode too), no trailing dot. */
const DOMAIN =
  /^(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)*[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?$/u;

/**
 * A syntactically plausible single mailbox: exactly one `@`, a non-empty local part, a domain made
 * of DNS labels, no whitespace or control characters. Anything else could make a glob match
 * something the admin did not mean (`*@*.example.com` against `eve@evil.io#.example.com`).
 */
export function isSingleMailbox(email: string): boolean {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (email.length > 254 || /[\s\u0000-\u001f\u007f-\u009f]/u.test(email)) return false;
  const at = email.indexOf('@');
  return at > 0 && at === email.lastIndexOf('@') && DOMAIN.test(email.slice(at + 1));
}

/** Why an identity is refused on a share, or undefined when it is admitted (seed step 7). */
export function refusalReason(identity: Identity, oauth: ShareOAuth): string | undefined {
  if (!identity.verified) return `the email address ${identity.email} is not verified by the provider`;
  if (!isSingleMailbox(identity.email)) return 'the provider returned an invalid email address';
  if (oauth.emailPatterns.length > 0 && !oauth.emailPatterns.some((p) => p.matches(identity.email))) {
    return `${identity.email} is not allowed to access this share`;
  }
  return undefined;
}

/** Remembered answers per share configuration (a reloaded share is a new object, so nothing stale survives it). */
const sessionAnswers = new WeakMap<ShareOAuth, Map<string, string | undefined>>();
/** Bound on the addresses remembered per share: past it the memory starts again empty. */
const SESSION_ANSWERS_MAX = 1024;

/**
 * `refusalReason` for the verified address of a session, remembered per share: every request of a
 * session asks again, and the answer can change only with the share's configuration.
 */
export function sessionRefusal(email: string, oauth: ShareOAuth): string | undefined {
  let answers = sessionAnswers.get(oauth);
  if (!answers) {
    answers = new Map<string, string | undefined>();
    sessionAnswers.set(oauth, answers);
  }
  if (answers.has(email)) return answers.get(email);
  if (answers.size >= SESSION_ANSWERS_MAX) answers.clear();
  const reason = refusalReason({ email, verified: true }, oauth);
  answers.set(email, reason);
  return reason;
}
