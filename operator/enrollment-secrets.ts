import { problem, type Result } from '../lib/errors.ts';
import { isNotFound, type KubeClient } from '../lib/kube/client.ts';
import { SECRETS, objectPath, resourcePath, type KubeObject } from '../lib/kube/resources.ts';
import { deleteChild } from './apply.ts';
import {
  enrollmentSecret,
  enrollmentSecretName,
  readEnrollmentState,
  type AgentEnrollment,
  type EnrollmentState,
  type ValidEnrollment,
} from './enrollment-children.ts';

/**
 * The Secrets an AgentEnrollment reads and writes: the account token its spec names, and the
 * enrollment state (`svc-agent-<name>-enrollment`: envZId, enrollment token, pinned controller
 * identity). Both are read from the API server, not the cache, so a retry right after a write
 * sees it and never enables a second environment.
 */
export class EnrollmentSecrets {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  /** The account token from spec.accountTokenSecretRef, or why there is none (never the value). */
  async accountToken(e: AgentEnrollment, spec: ValidEnrollment): Promise<Result<string>> {
    const where = `Secret ${spec.secretName} key ${spec.secretKey}`;
    let secret: KubeObject;
    try {
      secret = await this.client.get(resourcePath(SECRETS, e.metadata.namespace, spec.secretName));
    } catch (err) {
      if (isNotFound(err)) return { ok: false, problems: [problem(where, 'the Secret does not exist', 'not_found')] };
      throw err;
    }
    const value = (secret.data as Record<string, string> | undefined)?.[spec.secretKey];
    const token = value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8').trim();
    return token
      ? { ok: true, value: token }
      : { ok: false, problems: [problem(where, 'the key is missing or empty', 'required')] };
  }

  async readState(e: AgentEnrollment): Promise<EnrollmentState | undefined> {
    try {
      const secret = await this.client.get(
        resourcePath(SECRETS, e.metadata.namespace, enrollmentSecretName(e.metadata.name)),
      );
      return readEnrollmentState(secret.data as Record<string, string> | undefined);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async writeState(e: AgentEnrollment, state: EnrollmentState): Promise<void> {
    const secret = enrollmentSecret(e, state);
    // Apply replaces the data map as a whole (keys not given are removed), so stale keys cannot linger.
    await this.client.apply(objectPath(SECRETS, secret), secret);
  }

  async deleteState(e: AgentEnrollment): Promise<void> {
    const name = enrollmentSecretName(e.metadata.name);
    await deleteChild(this.client, SECRETS, { metadata: { name, namespace: e.metadata.namespace ?? '' } });
  }
}
