import { errorText } from '../lib/errors.ts';
import type { Readiness } from '../lib/health.ts';
import type { ControllerStore } from './store.ts';

/** How long `/readyz` waits for the store before it reports the controller not ready. */
const STORE_TIMEOUT_MS = 3_000;
/** An account id no record has: reading it costs one lookup, and "absent" is an answer. */
const PROBE_ID = 'readiness-probe';

/**
 * The controller's `/readyz`: ready while its store answers a read (the Kubernetes store: the API
 * server returns the record Secret or 404 in time). A store that fails or stays silent makes the
 * pod unready, so its Service stops sending requests that could only fail.
 */
export async function storeReadiness(store: ControllerStore, timeoutMs = STORE_TIMEOUT_MS): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([store.getAccount(PROBE_ID), silent]);
    return { ok: true, detail: 'ok' };
  } catch (err) {
    return { ok: false, detail: `store unreachable: ${errorText(err)}` };
  } finally {
    clearTimeout(timer);
  }
}
