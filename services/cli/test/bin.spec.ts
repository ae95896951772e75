import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ratchetArgv, ratchetBin, temporaryDirectory } from './helpers';

// The `ratchet` command as a user runs it: the built bin in a child process.

describe('the ratchet command', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
  });
  afterAll(async () => {
    await remove();
  });

  function ratchet(args: string[], env: Record<string, string> = {}) {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    const result = spawnSync(process.execPath, ratchetArgv(args), { cwd: dir, env: { ...clean, RATCHET_STORAGE_DATA_DIR: path.join(dir, 'data'), ...env }, encoding: 'utf8', timeout: 60_000 });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  it('makes a token whose printed users-file entry admits it, and refuses an unknown role', () => {
    const made = ratchet(['token', '--name', 'ana@example.com', '--team', 'payments', '--roles', 'submitter,approver']);
    expect(made.status).toBe(0);
    const token = /^\s+(rtk_\S+)$/m.exec(made.stdout)?.[1] as string;
    const entry = parseYaml(made.stdout.slice(made.stdout.indexOf('  - name:'))) as { name: string; team: string; roles: string[]; tokenSha256: string }[];
    expect(entry).toEqual([{ name: 'ana@example.com', team: 'payments', roles: ['submitter', 'approver'], tokenSha256: createHash('sha256').update(token).digest('hex') }]);
    const refused = ratchet(['token', '--roles', 'boss']);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('--roles has boss, which is not a role; use any of viewer, submitter, approver, admin');
  });

  it('says exactly which variables to set when no model is configured, and exits 78', () => {
    const result = ratchet(['run', 'a CLI that manages TODO items in JSON']);
    expect(result.status).toBe(78);
    expect(result.stderr).toContain('RATCHET_MODEL_BASE_URL');
    expect(result.stderr).toContain('RATCHET_MODEL_NAME');
    expect(result.stderr).toContain('RATCHET_MODEL_API_KEY');
  });

  it('explains bad arguments and exits non-zero', () => {
    const noGoal = ratchet(['run']);
    expect(noGoal.status).not.toBe(0);
    // Without a goal the run asks for one at a terminal; with none to ask at, it says how to give it.
    expect(noGoal.stderr).toContain('the goal is empty and there is no terminal to ask for it; usage: ratchet run "a CLI that manages TODO items in JSON"');
    const badLang = ratchet(['run', 'x', '--lang', 'cobol'], { RATCHET_MODEL_BASE_URL: 'http://127.0.0.1:9/v1', RATCHET_MODEL_NAME: 'm' });
    expect(badLang.status).toBe(1);
    expect(badLang.stderr).toContain('use python, typescript or javascript');
  });

  it('refuses an oversize or malformed --label before anything runs, saying the limit', () => {
    const long = ratchet(['run', 'a CLI that manages TODO items in JSON', '--label', `ticket=${'x'.repeat(300)}`]);
    expect(long.status).toBe(1);
    expect(long.stderr).toBe('ratchet: --label: label "ticket" has a value of 300 characters; at most 256 are accepted: put longer text in the goal or a workspace file\n');
    const many = ratchet(['run', 'x', ...Array.from({ length: 33 }, (_, index) => ['--label', `l${index}=v`]).flat()]);
    expect(many.stderr).toBe('ratchet: --label has 33 labels; at most 32 are accepted: keep the ones you filter by\n');
    const key = ratchet(['run', 'x', '--label', 'my team=payments']);
    expect(key.stderr).toMatch(/^ratchet: --label: label key "my team" is not a label name: use at most 63 letters, digits/);
    expect(ratchet(['run', 'x', '--label', 'payments']).stderr).toBe('ratchet: --label "payments": write it as KEY=VALUE, e.g. --label team=payments\n');
  });

  it('runs as an executable through its #! line, as npx and a PATH install run it', () => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    // The #! line names `node`: the one running this test comes first on PATH.
    const env = { ...clean, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env['PATH'] ?? ''}`, RATCHET_STORAGE_DATA_DIR: path.join(dir, 'executable-data') };
    const result = spawnSync(ratchetBin, ['history'], { cwd: dir, env, encoding: 'utf8', timeout: 60_000 });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('no tasks yet');
  });

  it('lists an empty history and rejects an unknown task', () => {
    const history = ratchet(['history']);
    expect(history.status).toBe(0);
    expect(history.stdout).toContain('no tasks yet');
    const show = ratchet(['show', 'abcdef12']);
    expect(show.status).toBe(1);
    expect(show.stderr).toContain('no task abcdef12');
  });

  it('loads only the client for a command sent to a server: no storage, bus, metrics or service code', () => {
    // What the command loaded, written as it exits by a module preloaded before the bin.
    const preload = path.join(dir, 'list-modules.cjs');
    const listed = path.join(dir, 'modules.txt');
    writeFileSync(preload, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(listed)}, Object.keys(require.cache).join('\\n')));\n`);
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    // Port 1 refuses the connection: the command loads what it needs, finds no server and says so.
    const result = spawnSync(process.execPath, ['--require', preload, ...ratchetArgv(['history'])], { cwd: dir, env: { ...clean, RATCHET_SERVER: '127.0.0.1:1' }, encoding: 'utf8', timeout: 60_000 });
    expect(result.stderr).toContain('the Ratchet server at 127.0.0.1:1 is not reachable');
    const modules = readFileSync(listed, 'utf8').split('\n');
    expect(modules.some((file) => file.includes('@grpc/grpc-js'))).toBe(true);
    const unneeded = ['@electric-sql/pglite', `${path.sep}pg${path.sep}`, '@nats-io', 'prom-client', `${path.sep}pino${path.sep}`, 'protobufjs', 'web-tree-sitter', 'orchestrator/dist/adapters', 'orchestrator/dist/runner', 'memory/dist/handlers', 'memory/dist/adapters/lesson-repository', 'libs/bus', 'libs/db'];
    expect(unneeded.filter((name) => modules.some((file) => file.includes(name)))).toEqual([]);
  });

  it('prints help', () => {
    const help = ratchet(['--help']);
    expect(help.stdout).toContain('run [options] [goal...]');
    expect(help.stdout).toContain('demo');
  });
});
