import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from '@ratchet/errors';
import { loadConfig } from '@ratchet/config';
import { defaultDependencyPolicy, dependencyConfigSchema, loadDependencyPolicy, safetyConfigSchema, sandboxImagePackages } from '../src';

const shippedConfig = path.join(__dirname, '..', '..', '..', 'config');
const directories: string[] = [];

function configDirWith(yaml: string | undefined): string {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'safety-dependencies-'));
  directories.push(directory);
  if (yaml !== undefined) writeFileSync(path.join(directory, 'dependencies.yaml'), yaml);
  return directory;
}

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function loadError(directory: string, env: Record<string, string> = {}): AppError {
  try {
    loadDependencyPolicy(directory, env);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected loadDependencyPolicy to throw');
}

describe('config/dependencies.yaml', () => {
  it('ships the built-in policy written out', () => {
    expect(loadDependencyPolicy(shippedConfig, {})).toEqual(defaultDependencyPolicy);
  });

  it('uses the built-in policy when the file is missing', () => {
    expect(loadDependencyPolicy(configDirWith(undefined), {})).toBe(defaultDependencyPolicy);
  });

  it('reads the directory from RATCHET_CONFIG_DIR when none is given', () => {
    const directory = configDirWith('python:\n  default: deny\n');
    expect(loadDependencyPolicy(undefined, { RATCHET_CONFIG_DIR: directory }).python.default).toBe('deny');
  });

  it('keeps the defaults of every key the file leaves out, and names the file by its directory in reasons', () => {
    const directory = configDirWith('python:\n  default: deny\n  allow:\n    - name: Flask\n      version: ">= 2.2"\nnpm:\n  deny: []\n');
    const policy = loadDependencyPolicy(directory, {});
    expect(policy.source).toBe(path.join(path.basename(directory), 'dependencies.yaml'));
    expect(policy.python).toEqual({ default: 'deny', allow: [{ name: 'Flask', version: '>= 2.2' }], deny: defaultDependencyPolicy.python.deny, provided: defaultDependencyPolicy.python.provided });
    expect(policy.npm).toEqual({ ...defaultDependencyPolicy.npm, deny: [] });
    expect(Object.isFrozen(policy.python.allow[0])).toBe(true);
  });

  it('takes default and provided from the environment, any case, empty values unset', () => {
    const policy = loadDependencyPolicy(configDirWith(undefined), {
      RATCHET_DEPENDENCIES_PYTHON_DEFAULT: 'DENY',
      RATCHET_DEPENDENCIES_NPM_DEFAULT: ' ',
      RATCHET_DEPENDENCIES_NPM_PROVIDED: 'typescript, tsx',
    });
    expect(policy.python.default).toBe('deny');
    expect(policy.npm.default).toBe('ask');
    expect(policy.npm.provided).toEqual(['typescript', 'tsx']);
    expect(policy.python.allow).toEqual(defaultDependencyPolicy.python.allow);
  });

  it('accepts its own defaults', () => {
    const settings = { python: defaultDependencyPolicy.python, npm: defaultDependencyPolicy.npm };
    const images = Object.fromEntries(
      defaultDependencyPolicy.images.map((entry) => [entry.image, { python: Object.fromEntries(entry.python.map((item) => [item.name, item.version])), npm: Object.fromEntries(entry.npm.map((item) => [item.name, item.version])) }]),
    );
    expect(dependencyConfigSchema.parse(structuredClone(settings))).toEqual({ ...settings, images });
    expect(dependencyConfigSchema.parse({ ...structuredClone(settings), images })).toEqual({ ...settings, images });
  });

  it('lists every bad key at once, with what to write instead', () => {
    const yaml = [
      'python:',
      '  default: maybe',
      '  alow: []',
      '  allow:',
      '    - name: flask>=2',
      '    - name: numpy',
      "      version: '^1.26'",
      '    - name: pandas',
      '      colour: blue',
      '  deny:',
      '    - name: pycrypto',
      '    - name: numpy',
      '      reason: no',
      '  provided: [Flask_Login, flask-login]',
      'npm:',
      '  allow:',
      "    - name: zod",
      "      version: 'next'",
      '    - name: express',
      '      version: 4',
      '  deny:',
      "    - name: left-pad",
      "      reason: ''",
      'ruby: {}',
    ].join('\n');
    const error = loadError(configDirWith(yaml));
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    const lines = error.message.split('\n');
    expect(lines[0]).toMatch(/^invalid configuration in .*dependencies\.yaml \(\d+ problems\):$/);
    for (const expected of [
      'ruby: unknown key in ',
      'python.alow: unknown key in ',
      'known keys here: default, allow, deny, provided',
      'python.default: Invalid option: expected one of "ask"|"allow"|"deny"',
      'python.allow.0.name: "flask>=2" is not a PyPI project name; put the version in version_spec',
      'python.allow.1.version: "^1.26" is not a PEP 440 version specifier',
      'known keys here: name, version, note',
      'python.deny.0.reason: is required: one line saying why not and what to use instead',
      'npm.allow.0.version: "next" is not a semver range',
      'npm.deny.0.reason: must not be empty',
      "npm.allow.1.version: must be text; quote it in YAML, e.g. '>=2'",
    ]) {
      expect(lines).toContainEqual(expect.stringContaining(expected));
    }
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}- ruby: unknown key in .*dependencies\.yaml; known keys here: python, npm, images$/));
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}- python\.allow\.2\.colour: unknown key in /));
    expect(error.message).toContain('(from file ');
    expect(lines.at(-1)).toBe('The comments in the shipped config/dependencies.yaml say what each key takes.');
  });

  it('refuses a package listed twice or both allowed and denied, once the entries are otherwise valid', () => {
    const error = loadError(configDirWith('python:\n  deny:\n    - name: Flask\n      reason: no flask here\n  provided: [Flask_Login, flask-login]\n'));
    expect(error.message).toContain('python.deny.0.name: Flask is already in python.allow.0; keep one entry');
    expect(error.message).toContain('python.provided.1: flask-login is already in python.provided.0; keep one entry');
  });

  it("knows what each sandbox image has, and applies the one it is told the sandbox uses", () => {
    const plain = loadDependencyPolicy(shippedConfig, {});
    expect(plain.sandboxImage).toBe('');
    expect(plain.images.map((entry) => entry.image)).toEqual(['ratchet-sandbox:3-data']);
    expect(plain.images[0]?.python).toContainEqual({ name: 'flask', version: '2.2.2' });
    const data = loadDependencyPolicy(shippedConfig, {}, { sandboxImage: ' ratchet-sandbox:3-data ' });
    expect(data).toEqual({ ...defaultDependencyPolicy, sandboxImage: 'ratchet-sandbox:3-data' });
    expect(Object.isFrozen(data.images[0]?.python[0])).toBe(true);
    // Without the file too: the built-in images.
    expect(loadDependencyPolicy(configDirWith(undefined), {}, { sandboxImage: 'ratchet-sandbox:3-data' })).toEqual({ ...defaultDependencyPolicy, sandboxImage: 'ratchet-sandbox:3-data' });
  });

  it('learns the image from the safety process\'s sandbox.image (RATCHET_SANDBOX_IMAGE), as the tester and the runners do', () => {
    const read = (env: Record<string, string>) => loadConfig({ schema: safetyConfigSchema, service: 'safety', configDir: shippedConfig, env }).sandbox.image;
    expect(read({})).toBe('ratchet-sandbox:3');
    const image = read({ RATCHET_SANDBOX_IMAGE: 'ratchet-sandbox:3-data' });
    expect(sandboxImagePackages(loadDependencyPolicy(shippedConfig, {}, { sandboxImage: image }))?.image).toBe('ratchet-sandbox:3-data');
    expect(sandboxImagePackages(loadDependencyPolicy(shippedConfig, {}, { sandboxImage: read({}) }))).toBeUndefined();
  });

  it("reads a site's own images, and an empty images to list none", () => {
    const policy = loadDependencyPolicy(configDirWith("images:\n  registry.example.com/sandbox:py:\n    python:\n      Flask: '3.0.3'\n      pyyaml: '6.0.1'\n"), {}, { sandboxImage: 'registry.example.com/sandbox:py' });
    expect(policy.images).toEqual([{ image: 'registry.example.com/sandbox:py', python: [{ name: 'Flask', version: '3.0.3' }, { name: 'pyyaml', version: '6.0.1' }], npm: [] }]);
    expect(policy.python).toEqual(defaultDependencyPolicy.python);
    expect(loadDependencyPolicy(configDirWith('images: {}\n'), {}).images).toEqual([]);
  });

  it("lists every bad image entry: its reference, package names, versions and keys", () => {
    const yaml = [
      'images:',
      "  'bad image':",
      '    python: {}',
      "  'ratchet-sandbox:3-data':",
      '    python:',
      '      pyyaml: 6.0',
      "      flask: 'latest'",
      "      'flask>=2': '2.2.2'",
      '    npm:',
      "      zod: '3.23'",
      '    ruby: {}',
    ].join('\n');
    const error = loadError(configDirWith(yaml));
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    const lines = error.message.split('\n');
    for (const expected of [
      'images.bad image: is not an image reference; write it as sandbox.image names it, e.g. ratchet-sandbox:3-data',
      "images.ratchet-sandbox:3-data.python.pyyaml: must be text; quote it in YAML, e.g. '>=2'",
      'images.ratchet-sandbox:3-data.python.flask: "latest" is not a PEP 440 version',
      'images.ratchet-sandbox:3-data.python.flask>=2: "flask>=2" is not a PyPI project name',
      'images.ratchet-sandbox:3-data.npm.zod: "3.23" is not a semver version',
    ]) {
      expect(lines).toContainEqual(expect.stringContaining(expected));
    }
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}- images\.ratchet-sandbox:3-data\.ruby: unknown key in .*dependencies\.yaml; known keys here: python, npm$/));
  });

  it('refuses a package an image lists twice, once the entries are otherwise valid', () => {
    const error = loadError(configDirWith("images:\n  'ratchet-sandbox:3-data':\n    python:\n      jinja_2: '3.1.2'\n      Jinja-2: '3.1.2'\n"));
    expect(error.message).toContain('images.ratchet-sandbox:3-data.python.Jinja-2: Jinja-2 is the same package as jinja_2; keep one entry');
  });

  it('names the variable to fix for a bad environment value', () => {
    const error = loadError(configDirWith(undefined), { RATCHET_DEPENDENCIES_NPM_DEFAULT: 'sometimes' });
    expect(error.message).toContain('npm.default: Invalid option');
    expect(error.message).toContain('(from env RATCHET_DEPENDENCIES_NPM_DEFAULT="sometimes"); set RATCHET_DEPENDENCIES_NPM_DEFAULT or npm.default in');
  });

  it('reports YAML syntax errors with their line, and a file that is no mapping', () => {
    expect(loadError(configDirWith('python:\n  allow: [\n')).message).toMatch(/line \d+:\d+: YAML syntax error/);
    expect(loadError(configDirWith('- python\n')).message).toContain('expected a mapping with the keys python, npm, images at the top level');
  });
});
