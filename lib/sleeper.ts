/**
 * A delay that `wake()` cuts short: loops that back off (watch restarts, lease retries) must still
 * stop at once on shutdown instead of finishing their wait.
 */
export class Sleeper {
  private wakeCurrent: (() => void) | undefined;

  async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeCurrent = done;
    });
    this.wakeCurrent = undefined;
  }

  wake(): void {
    this.wakeCurrent?.();
  }
}
