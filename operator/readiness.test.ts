import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../lib/kube/resources.ts';
import { deploymentNotServing, ingressNotServing, podProblem, recheckAfterMs } from './readiness.ts';

const meta = (name: string, generation = 1) => ({ name, namespace: 'ns', generation });

describe('readiness', () => {
  it('a Deployment serves only with the current generation observed and an available replica', () => {
    const available = { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: '' };
    const serving = {
      metadata: meta('d', 2),
      status: { observedGeneration: 2, availableReplicas: 1, conditions: [available] },
    } as KubeObject;
    expect(deploymentNotServing(serving, 'd')).toBeUndefined();
    const stale = { ...serving, metadata: meta('d', 3) } as KubeObject;
    expect(deploymentNotServing(stale, 'd')).toMatchObject({ reason: 'DeploymentUnavailable', problem: false });
    expect(deploymentNotServing(undefined, 'd')?.message).toBe('Deployment d is not created yet');
    const stuck = {
      metadata: meta('d'),
      status: {
        conditions: [
          { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'timed out' },
        ],
      },
    } as KubeObject;
    expect(deploymentNotServing(stuck, 'd')).toEqual({
      reason: 'DeploymentUnavailable',
      message: 'Deployment d is not progressing: timed out',
      problem: true,
    });
  });

  it('reads init containers and unschedulable pods, and cuts long messages', () => {
    const init = {
      metadata: meta('p'),
      status: {
        initContainerStatuses: [
          { name: 'init', state: { waiting: { reason: 'ErrImagePull', message: 'x'.repeat(600) } } },
        ],
        containerStatuses: [{ name: 'agent', state: { waiting: { reason: 'PodInitializing' } } }],
      },
    } as KubeObject;
    const problem = podProblem([init]);
    expect(problem?.reason).toBe('ImagePullFailed');
    expect(problem?.message.length).toBe(400);
    const unschedulable = {
      metadata: meta('q'),
      status: {
        conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes match' }],
      },
    } as KubeObject;
    expect(podProblem([unschedulable])).toEqual({
      reason: 'Unschedulable',
      message: 'pod q cannot be scheduled: 0/3 nodes match',
      problem: true,
    });
    const starting = {
      metadata: meta('r'),
      status: { containerStatuses: [{ name: 'agent', state: { waiting: { reason: 'ContainerCreating' } } }] },
    } as KubeObject;
    expect(podProblem([starting])).toBeUndefined();
  });

  it('an Ingress is admitted once it has an address', () => {
    expect(ingressNotServing({ metadata: meta('i') }, 'i')?.reason).toBe('IngressPending');
    const admitted = { metadata: meta('i'), status: { loadBalancer: { ingress: [{ hostname: 'lb' }] } } } as KubeObject;
    expect(ingressNotServing(admitted, 'i')).toBeUndefined();
  });

  it('looks again soon at first, then less often, at most every 2 minutes', () => {
    const now = Date.parse('2026-01-01T01:00:00Z');
    expect(recheckAfterMs(undefined, now)).toBe(5000);
    expect(recheckAfterMs('2026-01-01T00:59:30Z', now)).toBe(15_000);
    expect(recheckAfterMs('2026-01-01T00:00:00Z', now)).toBe(120_000);
  });
});
