import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ScriptedModel, scriptedRoleModels, type RoleModels, type ScriptedTurn } from '@ratchet/llm';
import type { Output } from '../src/commands';

/** The built `ratchet` command. */
export const ratchetBin = path.resolve(__dirname, '../bin/ratchet.js');

/**
 * The arguments of `node` that run the built `ratchet` with `args` as a
 * shell runs it: with the node flags of its `#!/usr/bin/env -S node ...` line.
 */
export function ratchetArgv(args: readonly string[]): string[] {
  const shebang = readFileSync(ratchetBin, 'utf8').split('\n', 1)[0]!;
  const flags = shebang.replace(/^#!\S*env\s+(-S\s+)?node\b/, '').trim();
  return [...(flags === '' ? [] : flags.split(/\s+/)), ratchetBin, ...args];
}

/** Output that keeps every line, for assertions. */
export class RecordedOutput implements Output {
  readonly lines: string[] = [];
  readonly errors: string[] = [];
  out(line: string): void {
    this.lines.push(line);
  }
  err(line: string): void {
    this.errors.push(line);
  }
  get all(): string {
    return [...this.errors, ...this.lines].join('\n');
  }
}

/** One scripted model answering every role, as the demo uses it. */
export function scripted(turns: ScriptedTurn[], name = 'test-script'): { model: ScriptedModel; models: RoleModels } {
  const model = new ScriptedModel(turns, { name });
  return { model, models: scriptedRoleModels(model) };
}

export async function temporaryDirectory(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-cli-test-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export { codeReply, planReply, reflectionReply, rejectionOf as failure, testsReply } from '@ratchet/testing';

/** How a `ratchet` process ended. */
export interface Finished {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the built `ratchet` with `args` to its end, asynchronously, so a fake
 * server in the test's own process can answer it.
 */
export async function runRatchet(args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<Finished> {
  const child = spawn(process.execPath, ratchetArgv(args), { cwd: options.cwd, env: options.env, timeout: options.timeoutMs });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { status, stdout, stderr };
}
