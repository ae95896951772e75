import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { extendConfigSchema, loadConfig } from '@ratchet/config';
import { AppError } from '@ratchet/errors';
import { parse } from 'yaml';
import { cliConfigSchema } from '../src/cli-config';
import { defaultWorkspaceSettings, workspaceConfigSection } from '../src/workspace/settings';

const schema = extendConfigSchema({ workspace: workspaceConfigSection });

let configDir: string;

beforeEach(async () => {
  configDir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-workspace-settings-'));
});

afterEach(async () => {
  await rm(configDir, { recursive: true, force: true });
});

describe('the workspace config section', () => {
  it('is part of the CLI config, and config/cli.yaml writes out exactly its defaults', () => {
    expect(cliConfigSchema.shape.workspace).toBe(workspaceConfigSection);
    const shipped = parse(readFileSync(path.resolve(__dirname, '../../../config/cli.yaml'), 'utf8')) as { workspace: unknown };
    expect(workspaceConfigSection.parse(shipped.workspace)).toEqual(defaultWorkspaceSettings);
    expect(defaultWorkspaceSettings).toMatchObject({ maxFiles: 20_000, maxBytes: 50 * 1024 * 1024, maxFileBytes: 1024 * 1024, alwaysSkip: ['.git', 'node_modules'] });
  });

  it('takes RATCHET_WORKSPACE_* variables, lists comma-separated', async () => {
    await writeFile(path.join(configDir, 'cli.yaml'), 'workspace:\n  maxFiles: 10\n');
    const config = loadConfig({
      schema,
      service: 'cli',
      configDir,
      env: { RATCHET_WORKSPACE_MAX_FILES: '50000', RATCHET_WORKSPACE_MAX_FILE_BYTES: '2048', RATCHET_WORKSPACE_SECRET_PATTERNS: '.env, *.pem' },
    });
    expect(config.workspace).toMatchObject({ maxFiles: 50_000, maxFileBytes: 2048, secretPatterns: ['.env', '*.pem'], alwaysSkip: ['.git', 'node_modules'] });
  });

  it('refuses a negated deny pattern, naming the key', async () => {
    await writeFile(path.join(configDir, 'cli.yaml'), 'workspace:\n  secretPatterns: ["!.env"]\n');
    let error: unknown;
    try {
      loadConfig({ schema, service: 'cli', configDir, env: {} });
    } catch (caught) {
      error = caught;
    }
    expect(AppError.is(error)).toBe(true);
    expect((error as AppError).message).toContain('workspace.secretPatterns');
    expect((error as AppError).message).toContain('negated pattern');
  });
});
