import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { ErrorCode } from '@ratchet/errors';
import { BanditMode, codeConfigSection, createSafetyService, defaultCodeCheckSettings, defaultCodeRules, loadCodeCheck } from '../src';

const shippedConfig = path.join(__dirname, '..', '..', '..', 'config');
const directories: string[] = [];

function configDirWith(safetyYaml: string | undefined): string {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'safety-code-config-'));
  directories.push(directory);
  if (safetyYaml !== undefined) writeFileSync(path.join(directory, 'safety.yaml'), safetyYaml);
  return directory;
}

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('the code config section', () => {
  it('ships config/safety.yaml as the defaults written out', () => {
    expect(loadCodeCheck(shippedConfig, {})).toEqual(defaultCodeCheckSettings);
  });

  it('uses the defaults when safety.yaml is missing, and accepts its own defaults', () => {
    expect(loadCodeCheck(configDirWith(undefined), {})).toEqual(defaultCodeCheckSettings);
    expect(codeConfigSection.parse({ rules: structuredClone(defaultCodeRules) }).rules).toEqual(defaultCodeRules);
  });

  it('takes every key but the rules from the environment', () => {
    const settings = loadCodeCheck(configDirWith(undefined), {
      RATCHET_CODE_BANDIT: 'REQUIRED',
      RATCHET_CODE_BANDIT_TIMEOUT_SECONDS: '90',
      RATCHET_CODE_ESLINT: 'off',
      RATCHET_CODE_BLOCK_SEVERITY: 'medium',
      RATCHET_CODE_BLOCK_CONFIDENCE: 'high',
      RATCHET_CODE_WARN_SEVERITY: 'info',
    });
    expect(settings).toMatchObject({ bandit: BanditMode.REQUIRED, banditTimeoutMs: 90_000, eslint: false });
    expect(settings.policy).toEqual({ rules: defaultCodeRules, block: { severity: 'medium', confidence: 'high' }, warn: { severity: 'info', confidence: 'low' } });
  });

  it('replaces the rules with the ones safety.yaml lists', () => {
    const settings = loadCodeCheck(configDirWith("code:\n  rules:\n    - ids: ['bandit.B3*', py.weak-hash]\n      paths: ['legacy/**']\n      action: warn\n"), {});
    expect(settings.policy.rules).toEqual([{ ids: ['bandit.B3*', 'py.weak-hash'], paths: ['legacy/**'], action: 'warn' }]);
  });

  it('names the key and what to do for every mistake at once', () => {
    const yaml = ['code:', '  bandit: sometimes', '  banditTimeoutSeconds: 0', '  block:', '    severity: severe', '  rules:', '    - ids: [py.sql-injection]', '      action: block', '    - ids: [bandit.B602]', '      action: deny', '    - ids: []', '      action: warn'].join('\n');
    let message = '';
    try {
      loadCodeCheck(configDirWith(yaml), {});
    } catch (error) {
      expect(error).toMatchObject({ code: ErrorCode.CONFIG_INVALID });
      message = (error as Error).message;
    }
    expect(message).toContain('code.bandit');
    expect(message).toContain('RATCHET_CODE_BANDIT');
    expect(message).toContain('code.banditTimeoutSeconds');
    expect(message).toContain('code.block.severity');
    expect(message).toMatch(/code\.rules\.0\.ids\.0: py\.sql-injection is not a rule CheckCode reports; use a rule id such as .*closest: py\.sql-string-format/);
    expect(message).toContain('code.rules.1.action');
    expect(message).toContain('code.rules.2.ids');
  });

  it('refuses Bandit "required" without a sandbox, saying what to change', async () => {
    await expect(createSafetyService({ code: { ...defaultCodeCheckSettings, bandit: BanditMode.REQUIRED } })).rejects.toMatchObject({
      code: ErrorCode.CONFIG_INVALID,
      message: expect.stringContaining('set code.bandit (RATCHET_CODE_BANDIT) to auto or off'),
    });
  });
});
