import { randomBytes } from 'node:crypto';
import type { Logger } from '../lib/logger.ts';
import type { ConditionReason } from '../lib/error-codes.ts';
import { errorText } from '../lib/errors.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { EVENTS, resourcePath, type KubeObject } from '../lib/kube/resources.ts';

export type EventType = 'Normal' | 'Warning';

/**
 * Records core/v1 Events (shown by `kubectl describe`) for notable transitions. Recording is best
 * effort: a failed Event is logged, never fails the reconcile. Messages are written by the
 * reconcilers and never contain Secret contents.
 */
export class EventRecorder {
  private readonly client: KubeClient;
  private readonly logger: Logger;
  private readonly instance: string;

  constructor(client: KubeClient, logger: Logger, instance: string) {
    this.client = client;
    this.logger = logger;
    this.instance = instance;
  }

  record(object: KubeObject, type: EventType, reason: ConditionReason, message: string): void {
    void this.send(object, type, reason, message);
  }

  private async send(object: KubeObject, type: EventType, reason: ConditionReason, message: string): Promise<void> {
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const namespace = object.metadata.namespace ?? 'default';
    const event: KubeObject = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${object.metadata.name}.${randomBytes(8).toString('hex')}`, namespace },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: object.metadata.name,
        namespace,
        uid: object.metadata.uid,
        resourceVersion: object.metadata.resourceVersion,
      },
      type,
      reason,
      message: message.slice(0, 1024),
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      source: { component: 'svc-operator' },
      reportingComponent: 'svc-operator',
      reportingInstance: this.instance,
    };
    try {
      await this.client.create(resourcePath(EVENTS, namespace), event);
    } catch (err) {
      this.logger.warn(
        { object: `${namespace}/${object.metadata.name}`, reason },
        `recording event failed: ${errorText(err)}`,
      );
    }
  }
}
