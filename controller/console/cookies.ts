import type { IncomingMessage } from 'node:http';
import { cookieValue } from '../../lib/web/session.ts';

/**
 * The console's cookies: host-only (no Domain), `Path=/`, HttpOnly, SameSite=Strict, and Secure
 * when the console is served over https (then with the `__Host-` prefix, which browsers accept only
 * with exactly those attributes).
 */
export interface ConsoleCookie {
  readonly name: string;
  read(req: IncomingMessage): string | undefined;
  set(value: string, maxAgeSeconds: number): string;
  clear(): string;
}

export function consoleCookie(baseName: string, secure: boolean): ConsoleCookie {
  const name = secure ? `__Host-${baseName}` : baseName;
  const serialize = (value: string, maxAge: number) =>
    [`${name}=${value}`, 'Path=/', `Max-Age=${Math.max(0, Math.floor(maxAge))}`, 'HttpOnly', 'SameSite=Strict']
      .concat(secure ? ['Secure'] : [])
      .join('; ');
  return {
    name,
    read: (req) => {
      const value = cookieValue(req.headers.cookie, name);
      return value === '' ? undefined : value;
    },
    set: (value, maxAgeSeconds) => serialize(value, maxAgeSeconds),
    clear: () => serialize('', 0),
  };
}
