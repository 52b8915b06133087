import type { Duplex } from 'node:stream';

/**
 * Calls `onStuck` once when a relayed connection is stuck: bytes wait in it (unread by an end, or
 * written and not yet taken by an end) and no byte moved either way for `stuckMs`. A quiet
 * connection with nothing waiting (an idle SSH session, a pooled database connection) is never
 * stuck, however long it stays quiet; a slow reader that takes a chunk now and then is not either.
 * What a stuck connection holds (stream windows, pipe buffers) is freed only by cutting it.
 * Checked every half of `stuckMs`, so a cut comes between `stuckMs` and 1.5 × `stuckMs` after the
 * last byte moved. The watch ends when either end closes.
 */
export function watchStuck(ends: readonly Duplex[], stuckMs: number, onStuck: () => void): void {
  let moved = false;
  let stillChecks = 0;
  const mark = (): void => {
    moved = true;
  };
  const waiting = (): boolean => ends.some((end) => end.readableLength > 0 || end.writableLength > 0);
  const timer = setInterval(
    () => {
      if (moved || !waiting()) {
        moved = false;
        stillChecks = 0;
        return;
      }
      stillChecks += 1;
      if (stillChecks < 2) return;
      stop();
      onStuck();
    },
    Math.max(1, Math.floor(stuckMs / 2)),
  );
  timer.unref();
  const stop = (): void => {
    clearInterval(timer);
    for (const end of ends) end.off('data', mark);
  };
  for (const end of ends) {
    end.on('data', mark);
    end.once('close', stop);
  }
}
