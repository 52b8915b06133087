import type { ConditionInput } from './conditions.ts';

/**
 * How share hosts (`<token>.<shareDomain>`) get HTTPS (docs/kubernetes.md, "TLS for share hosts"):
 * - `none`: no TLS; share URLs in status say `http`.
 * - `perHost`: each share Ingress names its own Secret `svc-share-<name>-tls` in the share's
 *   namespace, which an issuer fills (cert-manager's ingress-shim with the Ingress annotations).
 * - `defaultCertificate`: the Ingress lists the host under `tls` without a Secret, so the ingress
 *   controller serves its default certificate (e.g. a wildcard given to ingress-nginx with
 *   `--default-ssl-certificate`); the wildcard key never leaves the controller's namespace.
 * - `secret`: the Ingress names one Secret the cluster administrator provides in every share
 *   namespace (the operator never copies a key into tenant namespaces).
 * - `external`: TLS ends before the ingress controller (a load balancer); no `tls` section.
 */
export type ShareTls =
  | { readonly mode: 'none' }
  | { readonly mode: 'perHost' }
  | { readonly mode: 'defaultCertificate' }
  | { readonly mode: 'external' }
  | { readonly mode: 'secret'; readonly secretName: string };

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The `--ingress-tls` flag: `none`, `per-host`, `default-certificate`, `external` or `secret:<name>`. */
export function parseShareTls(text: string): ShareTls | string {
  if (text === 'none') return { mode: 'none' };
  if (text === 'per-host') return { mode: 'perHost' };
  if (text === 'default-certificate') return { mode: 'defaultCertificate' };
  if (text === 'external') return { mode: 'external' };
  if (text.startsWith('secret:')) {
    const secretName = text.slice('secret:'.length);
    if (DNS_SUBDOMAIN.test(secretName) && secretName.length <= 253) return { mode: 'secret', secretName };
    return `secret:<name> needs a Secret name, got ${JSON.stringify(secretName)}`;
  }
  return `must be none, per-host, default-certificate, external or secret:<name>, got ${JSON.stringify(text)}`;
}

/** The Secret a per-host share Ingress names: `svc-share-<share>-tls`, beside the Ingress. */
export function perHostSecretName(childName: string): string {
  return `${childName}-tls`;
}

/** The share Ingress's `spec.tls`, or undefined when the Ingress itself terminates no TLS. */
export function ingressTls(tls: ShareTls | undefined, host: string, childName: string): object[] | undefined {
  switch (tls?.mode) {
    case 'perHost':
      return [{ hosts: [host], secretName: perHostSecretName(childName) }];
    case 'secret':
      return [{ hosts: [host], secretName: tls.secretName }];
    case 'defaultCertificate':
      return [{ hosts: [host] }];
    default:
      return undefined;
  }
}

/** Whether share URLs are `https`: every mode but `none`. */
export function shareTlsConfigured(tls: ShareTls | undefined): boolean {
  return tls !== undefined && tls.mode !== 'none';
}

const TLS_MESSAGES: Record<ShareTls['mode'], string> = {
  none: 'TLS is not configured for share hosts (operator.shareIngress.tls.mode none): the share is served over http',
  perHost: 'the Ingress names its own certificate Secret',
  defaultCertificate: "the Ingress lists the host for TLS with the ingress controller's default certificate",
  external: 'TLS is terminated in front of the ingress controller',
  secret: 'the Ingress names the installation certificate Secret',
};

/** The `TLS` condition of a public Share: whether its host is served over https, and how. */
export function tlsCondition(tls: ShareTls | undefined, childName: string): ConditionInput {
  const mode = tls?.mode ?? 'none';
  if (mode === 'none') return { type: 'TLS', status: 'False', reason: 'TLSNotConfigured', message: TLS_MESSAGES.none };
  const secret =
    tls?.mode === 'perHost' ? perHostSecretName(childName) : tls?.mode === 'secret' ? tls.secretName : undefined;
  const message = secret ? `${TLS_MESSAGES[mode]} ${secret}` : TLS_MESSAGES[mode];
  return { type: 'TLS', status: 'True', reason: 'TLSConfigured', message };
}
