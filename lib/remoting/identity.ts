import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { errorText, problem, type Problem, type Result } from '../errors.ts';

/** The JSON file `svc admin create identity <name>` writes (mode 0600). */
export interface IdentityFile {
  readonly version: 1;
  readonly name: string;
  readonly zId: string;
  /** Ed25519 public key, raw 32 bytes, base64url. */
  readonly publicKey: string;
  /** Ed25519 private key, PKCS#8 PEM. */
  readonly privateKey: string;
  readonly createdAt: string;
}

/** A loaded controller identity: signs remote commands. */
export interface ControllerIdentity {
  readonly zId: string;
  readonly publicKey: string;
  readonly privateKey: KeyObject;
}

export const IDENTITY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * A new controller identity: an Ed25519 key pair. Its identifier `z_id` is derived from the public
 * key (`ctl` + 16 base32 characters of its SHA-256), so a config whose `z_id` does not match the
 * identity file is detected at start-up, and an agent pinning the z_id pins the key too.
 */
export function createIdentity(name: string): IdentityFile {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = rawPublicKey(publicKey);
  return {
    version: 1,
    name,
    zId: zIdOf(raw),
    publicKey: raw,
    privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    createdAt: new Date().toISOString(),
  };
}

export function zIdOf(rawPublicKeyB64: string): string {
  const digest = createHash('sha256').update(Buffer.from(rawPublicKeyB64, 'base64url')).digest();
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let out = 'ctl';
  for (let i = 0; i < 16; i++) out += alphabet[(digest[i] ?? 0) & 31];
  return out;
}

export function rawPublicKey(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('not an Ed25519 public key');
  return jwk.x;
}

/** An Ed25519 public key object from its raw base64url form (as pinned by an agent). */
export function publicKeyFromRaw(raw: string): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw }, format: 'jwk' });
}

/**
 * Loads the identity named by `agent_controller` and checks it: readable by its owner only, a
 * valid Ed25519 key pair whose z_id matches both the file and the configured `z_id`. Every problem
 * is returned (for the config error), none thrown.
 */
export function loadIdentity(path: string, expectedZId: string): Result<ControllerIdentity> {
  const refuse = (message: string): Result<ControllerIdentity> => ({ ok: false, problems: [problem('', message)] });
  let text: string;
  try {
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) {
      return refuse(`${path} is readable by others (mode ${mode.toString(8)}); run chmod 600 ${path}`);
    }
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return refuse(`cannot read ${path}: ${errorText(err)}`);
  }
  let file: Partial<IdentityFile>;
  try {
    file = JSON.parse(text) as Partial<IdentityFile>;
  } catch {
    return refuse(`${path} is not JSON (create one with svc admin create identity <name>)`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(String(file.privateKey));
    if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('not Ed25519');
  } catch (err) {
    return refuse(`${path}: privateKey is not an Ed25519 PKCS#8 key (${errorText(err)})`);
  }
  const publicKey = rawPublicKey(createPublicKey(privateKey));
  const zId = zIdOf(publicKey);
  const problems: Problem[] = [];
  if (file.publicKey !== publicKey) problems.push(problem('', `${path}: publicKey does not belong to privateKey`));
  if (file.zId !== zId)
    problems.push(problem('', `${path}: zId ${JSON.stringify(file.zId)} does not match its key (${zId})`));
  if (expectedZId !== zId) {
    problems.push(
      problem('', `z_id ${JSON.stringify(expectedZId)} is not the identity in ${path} (its z_id is ${zId})`),
    );
  }
  return problems.length ? { ok: false, problems } : { ok: true, value: { zId, publicKey, privateKey } };
}
