import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_OWNERS, REGISTRARS, SUBCOMMAND_OWNERS } from '../../cli/main.ts';

/** Top-level command names one registrar adds to an empty program. */
async function namesOf(registrar: keyof typeof REGISTRARS): Promise<string[]> {
  const program = new Command('svc');
  (await REGISTRARS[registrar]())(program);
  return program.commands.map((c) => c.name());
}

describe('svc loads only the file of the command it runs', () => {
  it('names each top-level command of exactly one file, and only those', async () => {
    const byName = new Map<string, string[]>();
    for (const registrar of Object.keys(REGISTRARS) as (keyof typeof REGISTRARS)[]) {
      for (const name of await namesOf(registrar)) byName.set(name, [...(byName.get(name) ?? []), registrar]);
    }
    const single = Object.fromEntries(
      [...byName].filter(([, owners]) => owners.length === 1).map(([n, o]) => [n, o[0]]),
    );
    expect(COMMAND_OWNERS).toEqual(single);
    // A command several files add to (`agent`) is left to the load-everything path.
    expect([...byName].filter(([, owners]) => owners.length > 1).map(([name]) => name)).toEqual(['agent']);
  });

  it('names each subcommand of `agent` of exactly one file, and only those', async () => {
    const owners: Record<string, string> = {};
    for (const registrar of Object.keys(REGISTRARS) as (keyof typeof REGISTRARS)[]) {
      const program = new Command('svc');
      (await REGISTRARS[registrar]())(program);
      const agent = program.commands.find((c) => c.name() === 'agent');
      for (const sub of agent?.commands ?? []) {
        expect(owners[sub.name()], `agent ${sub.name()} registered twice`).toBeUndefined();
        owners[sub.name()] = registrar;
      }
    }
    expect(SUBCOMMAND_OWNERS).toEqual({ agent: owners });
  });
});
