/**
 * One full set of share pod settings (operator/pod-settings.ts), as the unit, real-API-server and
 * admission tests give them: every field set, each to a value the API server accepts.
 */
export const POD_SETTINGS = {
  imagePullSecrets: [{ name: 'registry-creds' }],
  imagePullPolicy: 'Always' as const,
  resources: { requests: { cpu: '25m', memory: '96Mi' }, limits: { memory: '300Mi' } },
  nodeSelector: { pool: 'shares' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'shares', effect: 'NoSchedule' }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['shares'] }] }],
      },
    },
  },
  /** A PriorityClass the test creates first (the API server refuses a pod naming a missing one). */
  priorityClassName: 'tenant-low',
  labels: { team: 'platform' },
  annotations: { 'example.com/cost-centre': 'shares' },
};
