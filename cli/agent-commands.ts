import type { Command } from 'commander';
import { registerAccessCommands } from './access.ts';
import { registerAgentCommands } from './agent.ts';
import { registerServeCommands } from './serve.ts';
import { registerShareCommands } from './share.ts';
import { registerStatusCommands } from './status.ts';

/** The agent's commands: `serve`, `share`, `unshare`, `access`, `unaccess`, `status`, `agent share|backend`. */
export function registerLocalAgentCommands(program: Command): void {
  registerServeCommands(program);
  registerShareCommands(program);
  registerAccessCommands(program);
  registerStatusCommands(program);
  registerAgentCommands(program);
}
