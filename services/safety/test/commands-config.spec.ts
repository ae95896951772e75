import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { ErrorCode } from '@ratchet/errors';
import { commandsConfigSection, defaultCommandPolicy, defaultCommandRules, loadCommandPolicy } from '../src';

const shippedConfig = path.join(__dirname, '..', '..', '..', 'config');
const directories: string[] = [];

function configDirWith(safetyYaml: string | undefined): string {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'safety-config-'));
  directories.push(directory);
  if (safetyYaml !== undefined) writeFileSync(path.join(directory, 'safety.yaml'), safetyYaml);
  return directory;
}

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('the commands config section', () => {
  it('ships config/safety.yaml as the defaults written out', () => {
    expect(loadCommandPolicy(shippedConfig, {})).toEqual(defaultCommandPolicy);
  });

  it('uses the defaults when safety.yaml is missing', () => {
    expect(loadCommandPolicy(configDirWith(undefined), {})).toEqual(defaultCommandPolicy);
  });

  it('accepts its own defaults', () => {
    expect(commandsConfigSection.parse({ rules: structuredClone(defaultCommandRules) }).rules).toEqual(defaultCommandRules);
  });

  it('takes every key but the rules from the environment', () => {
    const policy = loadCommandPolicy(configDirWith(undefined), {
      RATCHET_COMMANDS_DEFAULT_DECISION: 'ASK',
      RATCHET_COMMANDS_MAX_COMMAND_LINE_CHARS: '500',
      RATCHET_COMMANDS_MAX_NESTING_DEPTH: '1',
      RATCHET_COMMANDS_WORK_DIRECTORY: '/home/sandbox/work',
      RATCHET_COMMANDS_SCRATCH_DIRECTORIES: '/tmp, /var/tmp',
    });
    expect(policy).toMatchObject({ defaultDecision: 'ask', maxCommandLineChars: 500, maxNestingDepth: 1, workDirectory: '/home/sandbox/work', scratchDirectories: ['/tmp', '/var/tmp'] });
    expect(policy.rules).toEqual(defaultCommandRules);
  });

  it('replaces the rules with the ones safety.yaml lists', () => {
    const policy = loadCommandPolicy(configDirWith('commands:\n  rules:\n    - id: cmd.no-make\n      programs: [make]\n      decision: deny\n      reason: no make here\n'), {});
    expect(policy.rules).toEqual([{ id: 'cmd.no-make', programs: ['make'], decision: 'deny', reason: 'no make here' }]);
  });

  it('refuses two rules with one id, once the rules are otherwise valid', () => {
    const rule = '    - id: cmd.twice\n      programs: [x]\n      decision: deny\n      reason: no\n';
    expect(() => loadCommandPolicy(configDirWith(`commands:\n  rules:\n${rule}${rule}`), {})).toThrow(
      expect.objectContaining({ code: ErrorCode.CONFIG_INVALID, message: expect.stringContaining('commands.rules.1.id: cmd.twice is used by an earlier rule; ids must be unique') }),
    );
  });

  it('lists every bad rule and key at once', () => {
    const yaml = [
      'commands:',
      '  maxCommandLineChars: 0',
      '  workDirectory: /',
      '  rules:',
      '    - id: cmd.a',
      '      progams: [x]',
      '      decision: deny',
      '      reason: typo',
      '    - id: cmd.b',
      '      decision: deny',
      '      reason: matches nothing',
      '    - id: cmd.c',
      '      programs: [x]',
      '      decision: block',
      '      reason: "{who} did it"',
      '    - id: cmd.parse-error',
      '      programs: [x]',
      '      decision: deny',
      '      reason: reserved',
      '    - id: GitPush',
      '      programs: [git]',
      '      decision: deny',
      '      reason: bad id',
    ].join('\n');
    let message = '';
    try {
      loadCommandPolicy(configDirWith(yaml), {});
    } catch (error) {
      expect(error).toMatchObject({ code: ErrorCode.CONFIG_INVALID });
      message = (error as Error).message;
    }
    expect(message).toContain('commands.maxCommandLineChars');
    expect(message).toContain('commands.workDirectory: must be an absolute directory other than /');
    expect(message).toContain('commands.rules.0.progams: unknown key');
    expect(message).toContain('commands.rules.1: a rule needs at least one of programs');
    expect(message).toContain('commands.rules.2.decision');
    expect(message).toContain('commands.rules.2.reason: may only use the placeholders {program}, {command}, {target}, {arguments}');
    expect(message).toContain('commands.rules.3.id: is reserved');
    expect(message).toContain('commands.rules.4.id: must be "cmd." and a kebab-case name');
    expect(message).toContain('RATCHET_COMMANDS_MAX_COMMAND_LINE_CHARS');
  });

  it('refuses code patterns that are no regular expression, git keys not in lowercase and unknown code sources', () => {
    const yaml = [
      'commands:',
      '  rules:',
      '    - id: cmd.a',
      "      code: ['os.system(']",
      '      decision: deny',
      '      reason: bad pattern',
      '    - id: cmd.b',
      '      gitConfig: [core.sshCommand]',
      '      decision: deny',
      '      reason: case',
      '    - id: cmd.c',
      '      codeFrom: [network]',
      '      decision: deny',
      '      reason: no such source',
    ].join('\n');
    expect(() => loadCommandPolicy(configDirWith(yaml), {})).toThrow(
      expect.objectContaining({
        code: ErrorCode.CONFIG_INVALID,
        message: expect.stringMatching(/commands\.rules\.0\.code\.0: is not a regular expression[\s\S]*commands\.rules\.1\.gitConfig: must be lowercase[\s\S]*commands\.rules\.2\.codeFrom\.0/),
      }),
    );
  });
});
