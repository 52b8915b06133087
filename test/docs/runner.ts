import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { createLab, type NetnsLab } from '../support/netns.ts';
import { ROOT, type ShellBlock } from './blocks.ts';

/** What one documentation block printed when run. */
export interface BlockRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A replacement applied to a block's text before it runs (a host name only a real deployment has). */
export type Rewrite = readonly [from: string, to: string];

const NODE = join(ROOT, 'node_modules/.bin/node');
const SVC = join(ROOT, 'bin/svc.js');
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * `svc` as a reader types it: the repository's bin/svc.js on the project's Node. A long-running role
 * (`serve`, `controller`, `public-frontend` without `--check`) starts in the background, as in a
 * second terminal, and the shim returns once its banner is printed. The token a `svc share` prints
 * is kept in `$DOCS_STATE/token`: the docs' `<token>` placeholder stands for it.
 */
const SVC_SHIM = `#!/bin/bash
long=
case "$1" in serve|controller|public-frontend) long=1 ;; esac
for a in "$@"; do [ "$a" = --check ] && long=; done
if [ -n "$long" ]; then
  log="$DOCS_STATE/$DOCS_MACHINE-$1-$(date +%s%N)"
  setsid ${NODE} ${SVC} "$@" >"$log.out" 2>"$log.err" </dev/null &
  pid=$!
  for _ in $(seq 600); do
    if grep -q 'is ready' "$log.out"; then sleep 0.3; cat "$log.out"; exit 0; fi
    kill -0 "$pid" 2>/dev/null || { cat "$log.out" "$log.err" >&2; exit 1; }
    sleep 0.1
  done
  echo "svc $1: no banner within 60 s" >&2; exit 1
fi
${NODE} ${SVC} "$@" >"$DOCS_STATE/last.out"
code=$?
cat "$DOCS_STATE/last.out"
token=$(sed -n 's/^token: \\(.*\\)$/\\1/p' "$DOCS_STATE/last.out")
[ -n "$token" ] && echo "$token" >"$DOCS_STATE/token"
exit $code
`;

/** `npx svc …` runs the shim above; nothing else may be fetched from a registry. */
const NPX_SHIM = `#!/bin/bash
[ "$1" = svc ] && { shift; exec svc "$@"; }
echo "npx in the docs test runs only svc, not: $*" >&2; exit 127
`;

/** `npm ci`/`npm install` were done by the run itself; `npm start` is the package's start script. */
const NPM_SHIM = `#!/bin/bash
case "$1" in
  ci|install) echo "npm $1: node_modules of the test run"; exit 0 ;;
  start) exec svc serve --dev ;;
esac
echo "npm in the docs test: only ci, install and start, not: $*" >&2; exit 127
`;

/** `<token>` in a command (not in its comment) is the token the last `svc share` printed. */
function placeholders(line: string): string {
  const comment = line.search(/(^|\s)#/);
  const code = comment < 0 ? line : line.slice(0, comment);
  return code.replaceAll('<token>', '"$(cat "$DOCS_STATE/token")"') + line.slice(code.length);
}

/**
 * Runs documentation blocks as a reader would, each machine of a walkthrough in its own network
 * namespace (so fixed ports such as 8080 and 18080 never meet another test's), with its own HOME
 * and working directory. Variables a block sets (`TOKEN=$(…)`) are seen by the scenario's later
 * blocks, on any machine, as a reader copies them. `close()` kills every process left in the
 * namespaces (servers the docs start in the background) and removes them.
 */
export class DocsRun {
  readonly lab: NetnsLab;
  readonly state: string;
  private readonly bin: string;
  private readonly base: string;

  constructor(base: string, machines: readonly string[]) {
    this.base = base;
    this.state = join(base, 'state');
    this.bin = join(base, 'bin');
    for (const dir of [this.state, this.bin]) mkdirSync(dir, { recursive: true });
    for (const [name, text] of [
      ['svc', SVC_SHIM],
      ['npx', NPX_SHIM],
      ['npm', NPM_SHIM],
    ] as const) {
      writeFileSync(join(this.bin, name), text);
      chmodSync(join(this.bin, name), 0o755);
    }
    for (const m of machines) for (const d of ['home', 'work']) mkdirSync(join(base, m, d), { recursive: true });
    this.lab = createLab(machines);
  }

  /** The working directory of `machine`, where its blocks run (and write their files). */
  cwd(machine: string): string {
    return join(this.base, machine, 'work');
  }

  /** Writes `files` (path relative to the machine's working directory → text) before a block uses them. */
  writeFiles(machine: string, files: Readonly<Record<string, string>>): void {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(this.cwd(machine), path)), { recursive: true });
      writeFileSync(join(this.cwd(machine), path), text);
    }
  }

  /** The address of `machine` on the lab's bridge. */
  address(machine: string): string {
    return (this.lab.machines[machine] as { address: string }).address;
  }

  /** Runs `block` on its machine (or `machine`) after `rewrites`; stdin holds one `yes`. */
  async run(block: ShellBlock, options: { machine?: string; rewrites?: readonly Rewrite[] } = {}): Promise<BlockRun> {
    const machine = options.machine ?? block.machine;
    if (!machine) throw new Error(`${block.file}:${block.line}: no machine for the block`);
    let body = block.body.split('\n').map(placeholders).join('\n');
    for (const [from, to] of options.rewrites ?? []) body = body.replaceAll(from, to);
    return this.script(machine, `${block.scenario ?? 'adhoc'}`, body, `${block.file}:${block.line}`);
  }

  /** Runs the next block of `blocks` (taking it off the list) and expects it to succeed. */
  async next(
    blocks: ShellBlock[],
    options: { machine?: string; rewrites?: readonly Rewrite[] } = {},
  ): Promise<BlockRun> {
    const block = blocks.shift();
    if (!block) throw new Error('no block left in the scenario');
    const result = await this.run(block, options);
    expect(result.code, `${block.file}:${block.line}\n${result.stdout}\n${result.stderr}`).toBe(0);
    return result;
  }

  /** What `curl -i` prints for `url` on `machine` (status line first), with `Host` set to `host`. */
  async curl(machine: string, url: string, host?: string): Promise<string> {
    const header = host ? `-H 'Host: ${host}'` : '';
    return (await this.sh(machine, `curl -s -i --max-time 10 ${header} '${url}'`)).stdout;
  }

  /** Runs shell `text` on `machine` with the variables of `scenario`: a check or a step the prose implies. */
  sh(machine: string, text: string, scenario = 'checks'): Promise<BlockRun> {
    return this.script(machine, scenario, text, `check on ${machine}`);
  }

  private async script(machine: string, scenario: string, body: string, label: string): Promise<BlockRun> {
    const vars = join(this.state, `${scenario}.vars`);
    const file = join(this.base, machine, `block-${Date.now()}.sh`);
    writeFileSync(
      file,
      [
        'set -e',
        `__docs_before=" $(compgen -v | tr '\\n' ' ') "`,
        `[ -f ${vars} ] && source ${vars}`,
        `cd ${this.cwd(machine)}`,
        body,
        `for __docs_v in $(compgen -v); do case "$__docs_before" in *" $__docs_v "*) ;; *) [[ $__docs_v == __docs* ]] || declare -p "$__docs_v" ;; esac; done >${vars}.new`,
        `mv ${vars}.new ${vars}`,
        '',
      ].join('\n'),
    );
    return this.spawn(machine, file, label);
  }

  private spawn(machine: string, file: string, label: string, timeoutMs = 90_000): Promise<BlockRun> {
    const out = `${file}.out`;
    const err = `${file}.err`;
    const input = `${file}.in`;
    writeFileSync(input, 'yes\n');
    // Files, not pipes: a server the block leaves in the background keeps its output open.
    const fds = [openSync(input, 'r'), openSync(out, 'w'), openSync(err, 'w')] as const;
    const [command, ...args] = this.lab.exec(machine, ['bash', file]) as [string, ...string[]];
    const child = spawn(command, args, {
      stdio: [...fds],
      env: {
        PATH: `${this.bin}:${SYSTEM_PATH}`,
        HOME: join(this.base, machine, 'home'),
        TMPDIR: process.env.TMPDIR ?? '/tmp',
        LANG: 'C.UTF-8',
        DOCS_STATE: this.state,
        DOCS_MACHINE: machine,
      },
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(
          new Error(
            `${label}: still running after ${timeoutMs} ms:\n${readFileSync(out, 'utf8')}${readFileSync(err, 'utf8')}`,
          ),
        );
      }, timeoutMs);
      child.on('error', reject);
      child.on('exit', (code) => {
        clearTimeout(timer);
        for (const fd of fds) closeSync(fd);
        resolve({ code, stdout: readFileSync(out, 'utf8'), stderr: readFileSync(err, 'utf8') });
      });
    });
  }

  /** Kills what the blocks left running in every namespace, then removes the namespaces. */
  close(): void {
    for (const { netns } of Object.values(this.lab.machines)) {
      let pids: string[] = [];
      try {
        pids = execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' }).split('\n').filter(Boolean);
      } catch {
        // namespace already gone
      }
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // exited meanwhile
        }
      }
    }
    this.lab.remove();
  }
}
