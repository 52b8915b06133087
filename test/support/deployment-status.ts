/**
 * The status the Deployment controller writes once the pod of a one-replica Deployment runs (no
 * kube-controller-manager or kubelet runs on the test control plane): one replica of `generation`
 * available, with its `Available` condition.
 */
export function availableDeploymentStatus(generation: number, now = new Date()): Record<string, unknown> {
  const at = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    observedGeneration: generation,
    replicas: 1,
    updatedReplicas: 1,
    readyReplicas: 1,
    availableReplicas: 1,
    conditions: [
      {
        type: 'Available',
        status: 'True',
        reason: 'MinimumReplicasAvailable',
        message: 'Deployment has minimum availability.',
        lastUpdateTime: at,
        lastTransitionTime: at,
      },
    ],
  };
}
