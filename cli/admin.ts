import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { resolveDataDir } from '../lib/data-dir.ts';
import { ControllerFileStore } from '../controller/file-store.ts';
import { IDENTITY_NAME, createIdentity } from '../lib/remoting/identity.ts';
import { newSecretToken } from '../controller/tokens.ts';
import { ConfigReader, loadYamlFile } from '../lib/config-reader.ts';
import { readStoreFlags, type StoreChoice } from '../controller/config.ts';
import { SvcError, badInput } from '../lib/errors.ts';
import { subcommand } from './local.ts';

interface StoreOptions {
  dataDir?: string;
  config?: string;
  store?: string;
  namespace?: string;
}

/**
 * `svc admin create account <email>` (prints an account token) and `svc admin create identity <name>`
 * (writes the controller's key pair file, prints its z_id). Both act on the controller's data
 * directory directly (the file store is safe to share with a running controller).
 */
export function registerAdminCommands(program: Command): void {
  const admin = subcommand(program, 'admin', 'controller administration');
  const create = subcommand(admin, 'create', 'create accounts and identities');

  create
    .command('account')
    .description("create an account; prints its account token (the controller keeps only the token's hash)")
    .argument('<email>', 'email address of the account owner')
    .option('--data-dir <dir>', "the controller's data directory (default $SVC_DATA_DIR or ~/.svc)")
    .option('-c, --config <file>', 'controller config file (its data_dir is used)')
    .option('--store <kind>', 'file (the data directory) or kubernetes (Secrets in --namespace)')
    .option('--namespace <ns>', 'with --store kubernetes: the controller namespace (default: the pod namespace)')
    .action(async (email: string, opts: StoreOptions) => {
      if (!/^[^@\s]+@[^@\s]+$/.test(email))
        throw badInput(`<email>: must be an email address, got ${JSON.stringify(email)}`);
      const r = new ConfigReader();
      const choice = readStoreFlags(r, opts);
      r.finish('the svc admin create account flags');
      const { openStore } = await import('../controller/start.ts');
      const store = (await openStore(choice as StoreChoice)) ?? new ControllerFileStore(controllerDataDir(opts));
      const { token, id, hash } = newSecretToken('svca');
      await store.createAccount({ id, email, tokenHash: hash, createdAt: new Date().toISOString() });
      await store.close();
      process.stdout.write(`${token}\n`);
      process.stderr.write(`account for ${email} created; the token above is shown once: keep it secret\n`);
    });

  create
    .command('identity')
    .description('create an identity (Ed25519 key pair) for the controller; prints its identifier (z_id)')
    .argument('<name>', 'free name of the identity (letters, digits, . _ -)')
    .option('-o, --output <file>', 'where to write the identity JSON file (default <data-dir>/identities/<name>.json)')
    .option('--data-dir <dir>', 'data directory (default $SVC_DATA_DIR or ~/.svc)')
    .action((name: string, opts: { output?: string; dataDir?: string }) => {
      if (!IDENTITY_NAME.test(name)) {
        throw badInput(`<name>: letters, digits, '.', '_' and '-' only (at most 64), got ${JSON.stringify(name)}`);
      }
      const path = resolve(opts.output ?? join(resolveDataDir(opts.dataDir), 'identities', `${name}.json`));
      const identity = createIdentity(name);
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      let fd: number;
      try {
        fd = openSync(path, 'wx', 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
          throw new SvcError('exists', `${path} already exists: choose another name or --output`);
        }
        throw err;
      }
      try {
        writeFileSync(fd, `${JSON.stringify(identity, null, 2)}\n`);
      } finally {
        closeSync(fd);
      }
      process.stdout.write(`${identity.zId}\n`);
      process.stderr.write(
        `identity ${name} written to ${path} (mode 0600). Add to the controller configuration and restart it:\n` +
          `agent_controller:\n  z_id: ${identity.zId}\n  identity_path: ${path}\n`,
      );
    });
}

/** `--data-dir`, else `$SVC_DATA_DIR`, else `data_dir` of the `--config` file , else ~/.svc. */
function controllerDataDir(opts: StoreOptions): string {
  const doc = opts.config ? (loadYamlFile(opts.config) as { data_dir?: unknown } | null) : undefined;
  const configured = typeof doc?.data_dir === 'string' ? doc.data_dir : undefined;
  return resolveDataDir(opts.dataDir, configured);
}
