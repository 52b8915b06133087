export { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
