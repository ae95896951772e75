import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ErrorCode } from '@ratchet/errors';
import { readProjectFile } from './project-file';

const made: string[] = [];
async function workspaceWith(text?: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ratchet-project-file-'));
  made.push(dir);
  if (text !== undefined) await writeFile(path.join(dir, '.ratchet.yaml'), text);
  return dir;
}

afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('.ratchet.yaml', () => {
  it('gives nothing for a workspace without one', async () => {
    expect(await readProjectFile(await workspaceWith())).toEqual({});
  });

  it('reads the setup and test commands, a list as one script that stops at the first failure', async () => {
    const dir = await workspaceWith('setup:\n  - cd tools\n  - python3 make_version.py\ntest_command: python3 -m pytest -q tests\n');
    expect(await readProjectFile(dir)).toEqual({ setup: 'set -e\ncd tools\npython3 make_version.py', testCommand: 'python3 -m pytest -q tests' });
  });

  it('names an unknown key, a wrong type and bad YAML, saying what is allowed', async () => {
    await expect(readProjectFile(await workspaceWith('setup: pip install -e .\ntests: pytest\n'))).rejects.toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: expect.stringMatching(/\.ratchet\.yaml: .*tests.*\(keys: setup and test_command/),
    });
    await expect(readProjectFile(await workspaceWith('setup: 3\n'))).rejects.toMatchObject({ message: expect.stringContaining('setup ') });
    await expect(readProjectFile(await workspaceWith('setup: ""\n'))).rejects.toMatchObject({ message: expect.stringContaining('setup is empty') });
    await expect(readProjectFile(await workspaceWith('setup: [unclosed\n'))).rejects.toMatchObject({ message: expect.stringContaining('is not valid YAML') });
  });
});
