import { readFileSync } from 'node:fs';

/** svc's version (package.json), sent by the agent with its tunnel so the console can show it. */
export const SVC_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
