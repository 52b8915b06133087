import { setTimeout as sleep } from 'node:timers/promises';
import { isNotFound, type KubeClient } from '../../lib/kube/client.ts';
import {
  ACCESSES,
  SHARES,
  apiVersion,
  resourcePath,
  type Access,
  type Condition,
  type KubeObject,
  type Resource,
  type Share,
} from '../../lib/kube/resources.ts';

/** Field manager and managed-by label of the objects the environment agent creates. */
const ENVIRONMENT_AGENT = 'svc-environment-agent';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';

/**
 * The Shares and Accesses of the environment agent's namespace, as the environment agent handles
 * them: list all (in pages), create one labelled as its own, delete one (already gone is fine),
 * and wait for the operator to report one Ready.
 */
export class NamespaceObjects {
  private readonly client: KubeClient;
  readonly namespace: string;
  private readonly readyTimeoutMs: number;

  constructor(client: KubeClient, namespace: string, readyTimeoutMs: number) {
    this.client = client;
    this.namespace = namespace;
    this.readyTimeoutMs = readyTimeoutMs;
  }

  shares(): Promise<Share[]> {
    return this.list<Share>(SHARES);
  }

  accesses(): Promise<Access[]> {
    return this.list<Access>(ACCESSES);
  }

  async create(resource: Resource, name: string, spec: object): Promise<void> {
    await this.client.request('POST', resourcePath(resource, this.namespace), {
      query: { fieldManager: ENVIRONMENT_AGENT },
      body: {
        apiVersion: apiVersion(resource),
        kind: resource.kind,
        metadata: { name, namespace: this.namespace, labels: { [MANAGED_BY_LABEL]: ENVIRONMENT_AGENT } },
        spec,
      },
    });
  }

  async remove(resource: Resource, name: string): Promise<void> {
    try {
      await this.client.delete(resourcePath(resource, this.namespace, name));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Polls the object until the operator reports a Ready condition for its generation that
   * `settled` accepts; undefined after the ready timeout.
   */
  async awaitReady<T extends Share | Access>(
    resource: Resource,
    name: string,
    settled: (ready: Condition) => boolean,
  ): Promise<{ object: T; ready: Condition } | undefined> {
    const deadline = Date.now() + this.readyTimeoutMs;
    for (;;) {
      let object: T | undefined;
      try {
        object = await this.client.get<T>(resourcePath(resource, this.namespace, name));
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      const ready = object?.status?.conditions?.find((c) => c.type === 'Ready');
      if (object && ready && object.status?.observedGeneration === object.metadata.generation && settled(ready)) {
        return { object, ready };
      }
      if (Date.now() > deadline) return undefined;
      await sleep(200);
    }
  }

  private async list<T extends KubeObject>(resource: Resource): Promise<T[]> {
    const out: T[] = [];
    let next: string | undefined;
    do {
      const page = await this.client.list<T>(resourcePath(resource, this.namespace), { limit: 500, continue: next });
      out.push(...page.items);
      next = page.metadata.continue || undefined;
    } while (next);
    return out;
  }
}
