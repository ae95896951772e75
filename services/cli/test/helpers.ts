import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ScriptedModel, type RoleModel, type RoleModels, type ScriptedTurn } from '@ratchet/llm';
import type { Output } from '../src/commands';

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
  const entry: RoleModel = { model, modelName: `scripted:${name}`, temperature: 0, maxTokens: 4096 };
  return { model, models: { planner: entry, coder: entry, tester: entry, reflector: entry } };
}

export async function temporaryDirectory(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-cli-test-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export const planReply = (file: string, test: string) =>
  JSON.stringify({
    summary: `${file} and its tests`,
    steps: [{ description: `write ${file}`, paths: [file] }],
    files: [
      { path: file, purpose: 'code', isTest: false },
      { path: test, purpose: 'tests', isTest: true },
    ],
    testStrategy: 'pytest',
    appliedLessonIds: [],
  });

export const codeReply = (path: string, content: string) => JSON.stringify({ files: [{ path, content }], deletedPaths: [], summary: `wrote ${path}` });

export const testsReply = (path: string, content: string) => JSON.stringify({ tests: [{ path, content }], summary: 'tests' });

export const reflectionReply = (rootCause: string, replanRecommended = false) =>
  JSON.stringify({
    rootCause,
    hypothesis: 'fixing it makes the test pass',
    fixDirection: `fix: ${rootCause}`,
    confidence: 0.7,
    replanRecommended,
    lesson: { title: `Lesson: ${rootCause}`, body: `Avoid this: ${rootCause}.`, tags: ['test'] },
    relevantLessonIds: [],
  });
