/**
 * Resolves at the first SIGTERM or SIGINT: every long-running `svc` process stops through this.
 * Call it before starting up, not after the ready line: a signal that arrives in between would
 * otherwise meet Node's default action and kill the process without its clean shutdown. (Node's
 * signal watchers do not keep a process alive, so a start-up that fails still exits.)
 */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const done = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve(signal);
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
}
