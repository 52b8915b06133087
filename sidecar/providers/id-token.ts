import type * as Jose from 'jose';
import type { JWTPayload, JWTVerifyGetKey, KeyObject } from 'jose';
import { systemClock, type Clock } from '../../lib/clock.ts';
import { errorText } from '../../lib/errors.ts';
import { KEY_SET_POLICY, keySetCache, type KeySetPolicy } from './key-set.ts';
import type { IssuerMetadata } from './oidc-discovery.ts';
import { invalidToken, ProviderError } from './types.ts';

/** Leeway for `exp`/`iat`/`nbf` against the provider's clock (openid-client's default too). */
const CLOCK_TOLERANCE_SECONDS = 30;

/**
 * jose, imported when the first ID token is verified. A share's sidecar in Kubernetes never takes
 * a login callback (the installation's auth endpoint does) and verifies an ID token only when it
 * refreshes a session, so most never load it: jose and Node's WebCrypto with it were 11 MiB of RSS
 * in a bare process (docs/benchmarks-history.md, "Share pods").
 */
let jose: Promise<typeof Jose> | undefined;
const loadJose = (): Promise<typeof Jose> => (jose ??= import('jose'));

export interface IdTokenClaims extends JWTPayload {
  readonly sub: string;
  readonly email?: unknown;
  readonly email_verified?: unknown;
}

export interface IdTokenVerifier {
  /**
   * OpenID Connect Core §3.1.3.7: signature by a key of the provider's JWKS with an accepted
   * algorithm, `iss` the discovered issuer, `aud` containing the client (and `azp`, when present or
   * when there are several audiences, naming it), `exp`/`iat` present and in time, and, on a login,
   * the `nonce` of that login. Throws ProviderError naming what failed.
   */
  verify(idToken: string, expectedNonce: string | undefined): Promise<IdTokenClaims>;
}

/**
 * Token times are checked against the system clock, not the frontend's injectable one: the provider
 * stamps its tokens in real time. The key set's age (key-set.ts) is the frontend's own matter and
 * follows `clock`. A token that fails verification is `invalid_token`; a key set that cannot be
 * fetched keeps its own failure (`provider_unreachable` for an outage).
 */
export function idTokenVerifier(
  provider: string,
  metadata: IssuerMetadata,
  clientId: string,
  clock: Clock = systemClock,
  policy: KeySetPolicy = KEY_SET_POLICY,
): IdTokenVerifier {
  const keySets = keySetCache(provider, metadata.jwksUri, loadJose, clock, policy);

  const verifyWith = async (idToken: string, getKey: JWTVerifyGetKey) => {
    const { jwtVerify, errors } = await loadJose();
    const options = {
      issuer: metadata.issuer,
      audience: clientId,
      algorithms: [...metadata.idTokenAlgorithms],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'],
    };
    try {
      return (await jwtVerify(idToken, getKey, options)).payload;
    } catch (err) {
      // A key set without `kid`s can hold several keys of the algorithm: jose then offers each.
      if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
      for await (const key of err as unknown as AsyncIterable<KeyObject>) {
        try {
          return (await jwtVerify(idToken, key, options)).payload;
        } catch (inner) {
          if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner;
        }
      }
      throw new errors.JWSSignatureVerificationFailed();
    }
  };

  return {
    async verify(idToken, expectedNonce) {
      const { errors } = await loadJose();
      let payload: JWTPayload;
      try {
        const since = clock.now();
        const used = await keySets.current();
        try {
          payload = await verifyWith(idToken, used.getKey);
        } catch (err) {
          if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
          const newer = await keySets.afterUnknownKey(used, since);
          if (!newer) throw err;
          payload = await verifyWith(idToken, newer.getKey);
        }
      } catch (err) {
        if (err instanceof ProviderError) throw err;
        throw invalidToken(provider, `the ID token is not valid: ${errorText(err)}`, err);
      }
      const invalid = (text: string) => invalidToken(provider, `the ID token is not valid: ${text}`);
      if (typeof payload.sub !== 'string' || payload.sub === '') throw invalid('"sub" is missing');
      const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      if (payload.azp !== undefined && payload.azp !== clientId) throw invalid('"azp" names another client');
      if (audiences.length > 1 && payload.azp === undefined) throw invalid('several audiences and no "azp"');
      if (expectedNonce !== undefined && payload.nonce !== expectedNonce)
        throw invalid('"nonce" does not match the login');
      return payload as IdTokenClaims;
    },
  };
}
