/**
 * Which field and header names hold secrets, for everything that must never write their values
 * (the logger, configuration error messages). A name is normalised (lower case; `-`, `_`, `.` and
 * any other punctuation dropped) and is a secret's when it ends in one of SECRET_SUFFIXES, plural
 * included: `clientSecret`, `signing_key`, `X-Frontend-Token`, `svc-peer-credential`, `Set-Cookie`.
 */
export const SECRET_SUFFIXES = ['secret', 'token', 'key', 'credential', 'password', 'cookie', 'authorization'];
const SECRET_NAME = new RegExp(`(?:${SECRET_SUFFIXES.join('|')})s?$`);

/** Whether a field or header of this name holds a secret (its value is never written out). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}
