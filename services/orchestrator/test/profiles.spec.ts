import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Language, type ProjectProfile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parse } from 'yaml';
import { loadProfiles, maxPromptChars } from '../src/adapters/profiles';
import { profileFits, resolveProfile } from '../src/domain/profiles';

const shippedConfig = path.join(__dirname, '..', '..', '..', 'config');
const directories: string[] = [];

/** A config directory whose profiles/ holds `files` (name -> YAML text). */
function configWith(files: Readonly<Record<string, string>> | undefined): string {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'ratchet-profiles-'));
  directories.push(directory);
  if (files !== undefined) {
    mkdirSync(path.join(directory, 'profiles'));
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(directory, 'profiles', name), content);
  }
  return directory;
}

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function loadError(configDir: string): AppError {
  try {
    loadProfiles(configDir);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected loadProfiles to throw');
}

const minimal = (name: string, language = 'python') => `name: ${name}\ndescription: a ${name}\nlanguage: ${language}\n`;

describe('the shipped profiles (config/profiles)', () => {
  const profiles = loadProfiles(shippedConfig);
  const byName = (name: string): ProjectProfile => {
    const profile = profiles.find((candidate) => candidate.name === name);
    if (profile === undefined) throw new Error(`no ${name} profile`);
    return profile;
  };

  it('are the four built-in kinds of project, by name', () => {
    expect(profiles.map((profile) => [profile.name, profile.language])).toEqual([
      ['cli_tool', Language.LANGUAGE_PYTHON],
      ['data_pipeline', Language.LANGUAGE_PYTHON],
      ['library', Language.LANGUAGE_UNSPECIFIED],
      ['web_app', Language.LANGUAGE_PYTHON],
    ]);
    for (const profile of profiles) {
      expect(profile.description).not.toBe('');
      expect(profile.testStyle).not.toBe('');
      expect(profile.prompt).not.toBe('');
      expect(profile.prompt.length).toBeLessThanOrEqual(maxPromptChars);
      expect(Object.isFrozen(profile)).toBe(true);
    }
  });

  it('start a web app from a create_app factory and a test client over a temporary SQLite file, with Flask', () => {
    const web = byName('web_app');
    expect(web.layout.map((file) => file.path)).toEqual(['app.py', 'tests/conftest.py', 'tests/test_health.py']);
    expect(web.layout[0]?.content).toContain('def create_app(config=None):');
    expect(web.layout[1]?.content).toContain('app.test_client()');
    expect(web.layout[1]?.content).toContain('tmp_path / "test.sqlite3"');
    expect(web.dependencies).toEqual([{ name: 'flask', versionSpec: '' }]);
    expect(web.testStyle).toContain("Flask's test client");
  });

  it('start a CLI from main(argv) -> int, tested in-process and as python -m', () => {
    const cli = byName('cli_tool');
    expect(cli.layout.map((file) => file.path)).toEqual(['cli.py', 'tests/conftest.py', 'tests/test_cli.py']);
    expect(cli.layout[0]?.content).toContain('def main(argv=None):');
    expect(cli.layout[1]?.content).toContain('[sys.executable, "-m", "cli", *args]');
    expect(cli.testStyle).toMatch(/exit code/);
    expect(cli.dependencies).toEqual([]);
  });

  it('start a data pipeline from golden files, and may use pandas', () => {
    const pipeline = byName('data_pipeline');
    expect(pipeline.layout.map((file) => [file.path, file.content === ''])).toEqual([
      ['pipeline.py', false],
      ['tests/test_pipeline.py', false],
      // Named in the layout for the model to write: a case's input and what it must produce.
      ['tests/fixtures/basic/input/data.csv', true],
      ['tests/fixtures/basic/expected/result.csv', true],
    ]);
    expect(pipeline.dependencies).toEqual([{ name: 'pandas', versionSpec: '' }]);
  });

  it('keep a library to any language, with no files of its own', () => {
    const library = byName('library');
    expect(library.layout).toEqual([]);
    expect(library.testStyle).toContain('public API');
  });

  it('are what the files say (content kept byte for byte)', () => {
    const file = parse(readFileSync(path.join(shippedConfig, 'profiles', 'web_app.yaml'), 'utf8')) as { layout: { content?: string }[] };
    expect(byName('web_app').layout.map((entry) => entry.content)).toEqual(file.layout.map((entry) => entry.content ?? ''));
  });
});

describe('loadProfiles', () => {
  it('has no profiles without a profiles directory, or with an empty one', () => {
    expect(loadProfiles(configWith(undefined))).toEqual([]);
    expect(loadProfiles(configWith({}))).toEqual([]);
  });

  it('reads *.yaml and *.yml, skips other and hidden files, follows links, and sorts by name', () => {
    const configDir = configWith({
      'z.yaml': minimal('alpha'),
      'a.yml': `${minimal('beta', 'any')}layout:\n  - path: README.md\n    purpose: what it is\ndependencies:\n  - name: zod\n    version: '^3'\n`,
      'notes.txt': 'not: a profile',
      '.hidden.yaml': 'broken: [',
    });
    mkdirSync(path.join(configDir, 'elsewhere'));
    writeFileSync(path.join(configDir, 'elsewhere', 'gamma.yaml'), minimal('gamma', 'typescript'));
    symlinkSync(path.join(configDir, 'elsewhere', 'gamma.yaml'), path.join(configDir, 'profiles', 'gamma.yaml'));
    mkdirSync(path.join(configDir, 'profiles', 'dir.yaml'));

    expect(loadProfiles(configDir)).toEqual([
      { name: 'alpha', description: 'a alpha', language: Language.LANGUAGE_PYTHON, layout: [], testStyle: '', dependencies: [], prompt: '' },
      { name: 'beta', description: 'a beta', language: Language.LANGUAGE_UNSPECIFIED, layout: [{ path: 'README.md', purpose: 'what it is', content: '' }], testStyle: '', dependencies: [{ name: 'zod', versionSpec: '^3' }], prompt: '' },
      { name: 'gamma', description: 'a gamma', language: Language.LANGUAGE_TYPESCRIPT, layout: [], testStyle: '', dependencies: [], prompt: '' },
    ]);
  });

  it('reads the config directory from RATCHET_CONFIG_DIR when none is given', () => {
    const configDir = configWith({ 'mine.yaml': minimal('mine') });
    const before = process.env['RATCHET_CONFIG_DIR'];
    process.env['RATCHET_CONFIG_DIR'] = configDir;
    try {
      expect(loadProfiles().map((profile) => profile.name)).toEqual(['mine']);
    } finally {
      if (before === undefined) delete process.env['RATCHET_CONFIG_DIR'];
      else process.env['RATCHET_CONFIG_DIR'] = before;
    }
  });

  it('lists every bad key of every file at once, each with its file', () => {
    const configDir = configWith({
      'bad.yaml': [
        'name: Web App',
        'language: ruby',
        'testStlye: typo',
        'layout:',
        '  - path: /etc/passwd',
        '    purpose: absolute',
        '  - path: ../outside.py',
        '    purpose: leaves',
        '  - path: app.py',
        '  - path: app.py',
        '    purpose: twice',
        '    colour: blue',
        'dependencies:',
        '  - name: flask>=2',
        '  - name: pandas',
        '    version: 2',
      ].join('\n'),
      'worse.yaml': 'name: [\n',
      'list.yaml': '- name: x\n',
    });
    const error = loadError(configDir);
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    const lines = error.message.split('\n');
    expect(lines[0]).toMatch(/^invalid project profiles in .*profiles \(\d+ problems\):$/);
    const shown = `${path.basename(configDir)}/profiles`;
    for (const expected of [
      `${shown}/bad.yaml: testStlye: unknown key; known keys here: name, description, language, layout, testStyle, dependencies, prompt`,
      `${shown}/bad.yaml: name: must be 1 to 64 lower-case letters, digits, _ and -, starting with a letter (e.g. web_app)`,
      `${shown}/bad.yaml: description: is required: one line saying what the profile is for`,
      `${shown}/bad.yaml: language: must be python, typescript, javascript or any, not "ruby"`,
      `${shown}/bad.yaml: layout.0.path: /etc/passwd is absolute; write it relative to the project root`,
      `${shown}/bad.yaml: layout.1.path: ../outside.py leaves the project`,
      `${shown}/bad.yaml: layout.2.purpose: is required: what the file is for`,
      `${shown}/bad.yaml: layout.3.colour: unknown key; known keys here: path, purpose, content`,
      `${shown}/bad.yaml: dependencies.0.name: is not a package name`,
      `${shown}/bad.yaml: dependencies.1.version: must be text; quote it in YAML`,
      `${shown}/worse.yaml:2:1: YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]`,
      `${shown}/list.yaml: expected a mapping with the keys name, description, language`,
    ]) {
      expect(lines).toContainEqual(expect.stringContaining(expected));
    }
    expect(lines.at(-1)).toBe('config/profiles/README.md says what each key takes.');
  });

  it('refuses a file listed twice in a layout or a package twice, once the entries are otherwise valid', () => {
    const error = loadError(configWith({ 'twice.yaml': `${minimal('twice')}layout:\n  - { path: app.py, purpose: a }\n  - { path: app.py, purpose: b }\ndependencies:\n  - name: Flask_Login\n  - name: flask-login\n` }));
    expect(error.message).toContain('twice.yaml: layout.1.path: app.py is already layout.0; list each file once');
    expect(error.message).toContain('twice.yaml: dependencies.1.name: flask-login is already dependencies.0; list each package once');
  });

  it('refuses two files with one profile name, naming both', () => {
    const configDir = configWith({ 'web_app.yaml': minimal('web_app'), 'web_app_copy.yaml': minimal('web_app') });
    const error = loadError(configDir);
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(error.message).toContain(`${path.basename(configDir)}/profiles/web_app_copy.yaml: name: web_app is already the name of the profile in ${path.basename(configDir)}/profiles/web_app.yaml; give each profile a name of its own`);
  });

  it('refuses a prompt longer than a role shows', () => {
    const long = 'x'.repeat(maxPromptChars + 1);
    expect(loadError(configWith({ 'long.yaml': `${minimal('long')}prompt: ${long}\n` })).message).toContain(`long.yaml: prompt: must be at most ${maxPromptChars} characters`);
  });

  it('says so when the profiles directory cannot be read', () => {
    const configDir = configWith(undefined);
    writeFileSync(path.join(configDir, 'profiles'), 'a file where the directory belongs');
    const error = loadError(configDir);
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(error.message).toMatch(/^cannot read the profiles directory .*profiles: ENOTDIR.*; make it readable, or remove it for no profiles$/);
  });
});

describe('resolveProfile', () => {
  const profiles = loadProfiles(shippedConfig);

  it('gives no profile for an empty name', () => {
    expect(resolveProfile(profiles, '', Language.LANGUAGE_PYTHON)).toBeUndefined();
    expect(resolveProfile(profiles, '   ', Language.LANGUAGE_PYTHON)).toBeUndefined();
  });

  it('finds a profile by name, whatever its case and blanks', () => {
    expect(resolveProfile(profiles, 'web_app', Language.LANGUAGE_PYTHON)?.name).toBe('web_app');
    expect(resolveProfile(profiles, ' Web_App ', Language.LANGUAGE_PYTHON)?.name).toBe('web_app');
  });

  it('refuses an unknown name, listing the known ones', () => {
    expect(() => resolveProfile(profiles, 'web-app', Language.LANGUAGE_PYTHON)).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: 'unknown profile "web-app"; known: cli_tool, data_pipeline, library, web_app (config/profiles/*.yaml)' }),
    );
    expect(() => resolveProfile([], 'web_app', Language.LANGUAGE_PYTHON)).toThrow('unknown profile "web_app"; no profiles are configured (config/profiles/*.yaml)');
  });

  it('refuses a profile for another language, saying which it is for and which fit', () => {
    expect(() => resolveProfile(profiles, 'web_app', Language.LANGUAGE_TYPESCRIPT)).toThrow(
      expect.objectContaining({
        code: ErrorCode.INVALID_ARGUMENT,
        message: 'profile "web_app" is for python, and the task is in typescript: set the task\'s language to python (--lang python), or choose another profile (profiles for typescript: library)',
      }),
    );
  });

  it('fits a profile for any language to every task, and every profile to a task without a language', () => {
    for (const language of [Language.LANGUAGE_PYTHON, Language.LANGUAGE_TYPESCRIPT, Language.LANGUAGE_JAVASCRIPT]) {
      expect(resolveProfile(profiles, 'library', language)?.name).toBe('library');
    }
    const web = profiles.find((profile) => profile.name === 'web_app');
    expect(web !== undefined && profileFits(web, Language.LANGUAGE_UNSPECIFIED)).toBe(true);
  });
});
