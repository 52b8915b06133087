import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** PEM files of one key pair with its certificate. */
export interface CertFiles {
  cert: string;
  key: string;
}

async function openssl(cwd: string, args: string[]): Promise<void> {
  await run('openssl', args, { cwd });
}

/** P-256 keys: fast to generate, accepted by kube-apiserver for serving and client certificates. */
async function ecKey(dir: string, name: string): Promise<string> {
  const key = join(dir, `${name}.key`);
  await openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key]);
  return key;
}

/** A self-signed certificate authority (one day; the control plane lives for one test file). */
export async function createCa(dir: string, name = 'ca'): Promise<CertFiles> {
  const key = await ecKey(dir, name);
  const cert = join(dir, `${name}.crt`);
  await openssl(dir, [
    'req',
    '-x509',
    '-new',
    '-key',
    key,
    '-subj',
    '/CN=svc-envtest-ca',
    '-days',
    '1',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-out',
    cert,
  ]);
  return { cert, key };
}

export interface LeafOptions {
  name: string;
  /** Subject common name; for client certificates kube-apiserver reads it as the user name. */
  commonName: string;
  /** Subject organisations; kube-apiserver reads them as the user's groups. */
  organizations?: string[];
  /** subjectAltName entries (`IP:127.0.0.1`, `DNS:localhost`) for serving certificates. */
  altNames?: string[];
  usage: 'server' | 'client';
}

/** Issues a leaf certificate signed by `ca`. */
export async function issueCert(dir: string, ca: CertFiles, options: LeafOptions): Promise<CertFiles> {
  const key = await ecKey(dir, options.name);
  const csr = join(dir, `${options.name}.csr`);
  const cert = join(dir, `${options.name}.crt`);
  const ext = join(dir, `${options.name}.ext`);
  const subject =
    (options.organizations ?? []).map((o) => `/O=${o}`).join('') + `/CN=${options.commonName.replaceAll('/', '\\/')}`;
  await openssl(dir, ['req', '-new', '-key', key, '-subj', subject, '-out', csr]);
  const extLines = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${options.usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
  ];
  if (options.altNames && options.altNames.length > 0) extLines.push(`subjectAltName=${options.altNames.join(',')}`);
  await writeFile(ext, extLines.join('\n') + '\n');
  await openssl(dir, [
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    // A random serial per certificate rather than -CAcreateserial's one serial file next to the CA,
    // which certificates issued in parallel (envtest issues two at once) read and write at the same
    // time ("Unable to load number from ca.srl").
    '-set_serial',
    `0x${randomBytes(16).toString('hex')}`,
    '-days',
    '1',
    '-extfile',
    ext,
    '-out',
    cert,
  ]);
  return { cert, key };
}

/** An RSA key pair for service-account token signing (kube-apiserver wants RS256 keys by default). */
export async function createServiceAccountKey(dir: string): Promise<string> {
  const key = join(dir, 'sa.key');
  await openssl(dir, ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', key]);
  return key;
}
