import { startRecording } from '../../agent/inspector/recorder.ts';
import { InspectorStore } from '../../agent/inspector/store.ts';

/**
 * The agent's request inspector as bench:frontend measures it: the recording hop of one share
 * (agent/inspector/recorder.ts) with the default bounds, in front of `upstream`. In `svc serve` the
 * hop runs in the frontend's process; here it has its own, and its CPU is counted with the frontend's.
 */
export async function startInspectorHop(arg: { upstream: string }): Promise<{ url: string; close(): Promise<void> }> {
  const front = await startRecording('inspected', new URL(arg.upstream), new InspectorStore(), 'svc-bench');
  return { url: front.url.href, close: () => front.close() };
}
