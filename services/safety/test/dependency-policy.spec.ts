import { describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from '@ratchet/errors';
import {
  checkDependencies,
  combineVersionSpecs,
  defaultDependencyPolicy,
  DependencyAction,
  DependencyRuleId,
  DependencyVerdict,
  editDistance,
  Ecosystem,
  judgeDependency,
  normalizePackageName,
  normalizeVersionSpec,
  parsePackageName,
  sandboxImagePackages,
  typosquatTarget,
  versionProblem,
  versionSatisfies,
  versionSpecProblem,
  type DependencyCheckInput,
  type DependencyPolicy,
  type ImportedPackage,
} from '../src';

const none: ReadonlySet<string> = new Set();
const judge = (ecosystem: Ecosystem, name: string, versionSpec = '', approved = none, policy: DependencyPolicy = defaultDependencyPolicy) =>
  judgeDependency(policy, ecosystem, { name, versionSpec }, approved);
const python = (name: string, versionSpec = '', approved = none) => judge(Ecosystem.PYTHON, name, versionSpec, approved);
const npm = (name: string, versionSpec = '', approved = none) => judge(Ecosystem.NPM, name, versionSpec, approved);

const check = (input: Partial<DependencyCheckInput>, policy: DependencyPolicy = defaultDependencyPolicy) =>
  checkDependencies(policy, { ecosystem: Ecosystem.PYTHON, dependencies: [], imports: [], approved: [], ...input });
const imported = (name: string, module: string, ...sites: [string, number][]): ImportedPackage => ({ name, module, sites: sites.map(([path, line]) => ({ path, line, column: 1 })) });

const withPython = (changes: Partial<DependencyPolicy['python']>): DependencyPolicy => ({ ...defaultDependencyPolicy, python: { ...defaultDependencyPolicy.python, ...changes } });

describe('package names', () => {
  it('normalises Python names by PEP 503 and npm names by case', () => {
    expect(normalizePackageName(Ecosystem.PYTHON, 'Flask_SQLAlchemy')).toBe('flask-sqlalchemy');
    expect(normalizePackageName(Ecosystem.PYTHON, 'ruamel.yaml')).toBe('ruamel-yaml');
    expect(normalizePackageName(Ecosystem.PYTHON, 'a-_.b')).toBe('a-b');
    expect(normalizePackageName(Ecosystem.NPM, 'JSONStream')).toBe('jsonstream');
    expect(normalizePackageName(Ecosystem.NPM, 'lodash.get')).toBe('lodash.get');
  });

  it('parses extras and scopes, and says what is wrong with a name', () => {
    expect(parsePackageName(Ecosystem.PYTHON, 'requests[socks, security]')).toEqual({ name: 'requests', normalized: 'requests', extras: '[socks, security]' });
    expect(parsePackageName(Ecosystem.NPM, '@types/node')).toEqual({ name: '@types/node', normalized: '@types/node', extras: '' });
    expect(parsePackageName(Ecosystem.PYTHON, 'flask>=2')).toEqual({ problem: expect.stringContaining('put the version in version_spec') });
    expect(parsePackageName(Ecosystem.PYTHON, '-flask')).toEqual({ problem: expect.stringContaining('is not a PyPI project name') });
    expect(parsePackageName(Ecosystem.NPM, 'zod@3')).toEqual({ problem: expect.stringContaining('put the version in version_spec') });
    expect(parsePackageName(Ecosystem.NPM, '.hidden')).toEqual({ problem: expect.stringContaining('is not an npm package name') });
    expect(parsePackageName(Ecosystem.NPM, 'node_modules')).toEqual({ problem: expect.stringContaining('is not an npm package name') });
    expect(parsePackageName(Ecosystem.NPM, 'has space')).toEqual({ problem: expect.stringContaining('is not an npm package name') });
  });

  it('counts a transposition as one edit and stops past the limit', () => {
    expect(editDistance('flaks', 'flask')).toBe(1);
    expect(editDistance('reqeusts', 'requests')).toBe(1);
    expect(editDistance('numpy', 'numpyy')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('a', 'abcdef', 2)).toBe(3);
  });

  it('finds typosquats of known names within one edit up to 8 characters and two beyond, never of short or known names', () => {
    const known = ['flask', 'requests', 'python-dateutil', 'toml', 'tomli'];
    expect(typosquatTarget('flaks', known)).toBe('flask');
    expect(typosquatTarget('fla-sk', known)).toBe('flask');
    expect(typosquatTarget('reqests', known)).toBe('requests');
    expect(typosquatTarget('python-dateutl', known)).toBe('python-dateutil');
    expect(typosquatTarget('pyton-dateutl', known)).toBe('python-dateutil');
    expect(typosquatTarget('flsk', known)).toBeUndefined();
    expect(typosquatTarget('tomli', known)).toBeUndefined();
    expect(typosquatTarget('flask', known)).toBeUndefined();
    expect(typosquatTarget('flaskapp', known)).toBeUndefined();
  });
});

describe('version specifiers', () => {
  it.each([
    ['>=2,<4'],
    ['==2.0.1'],
    ['~=2.2'],
    ['==1.4.*'],
    ['!=2.0.0rc1'],
    ['>=1.0.post1'],
    ['==1.0+local.1'],
    ['===weird-1'],
    ['>=2.0a1,<3.0.dev0'],
  ])('accepts the PEP 440 specifier %s', (spec) => {
    expect(versionSpecProblem(Ecosystem.PYTHON, normalizeVersionSpec(Ecosystem.PYTHON, spec))).toBeUndefined();
  });

  it.each([
    ['^2', 'has no operator'],
    ['2.0', 'has no operator'],
    ['>=2,', 'an empty clause'],
    ['>=two', 'is not a PEP 440 version'],
    ['>=2.*', 'only == and != take a .* suffix'],
    ['~=2', 'needs at least two release numbers'],
    ['>=1.0+local', 'only == and != take a local version'],
  ])('refuses the Python specifier %s: %s', (spec, problem) => {
    expect(versionSpecProblem(Ecosystem.PYTHON, normalizeVersionSpec(Ecosystem.PYTHON, spec))).toContain(problem);
  });

  it('accepts semver ranges, takes latest and * as any, and refuses tags, URLs, git and file specifiers', () => {
    for (const spec of ['^4', '~1.2.3', '>=1.2 <2', '1.x || 2.x', '1.2.3 - 2.3.4', '4.17.21']) expect(versionSpecProblem(Ecosystem.NPM, spec)).toBeUndefined();
    expect(normalizeVersionSpec(Ecosystem.NPM, ' latest ')).toBe('');
    expect(normalizeVersionSpec(Ecosystem.NPM, '*')).toBe('');
    expect(normalizeVersionSpec(Ecosystem.PYTHON, '>= 2, < 4')).toBe('>=2,<4');
    expect(versionSpecProblem(Ecosystem.NPM, 'next')).toContain('is not a semver range');
    expect(versionSpecProblem(Ecosystem.NPM, '^4 garbage')).toContain('is not a semver range');
    for (const spec of ['git+https://github.com/a/b.git', 'file:../x', 'github:a/b', 'a/b', 'https://example.com/x.tgz', 'npm:zod@3']) {
      expect(versionSpecProblem(Ecosystem.NPM, spec)).toContain('only registry versions can be installed');
    }
  });

  it('combines Python specifiers clause by clause', () => {
    expect(combineVersionSpecs(Ecosystem.PYTHON, '', '>=2,<4')).toEqual({ ok: true, spec: '>=2,<4' });
    expect(combineVersionSpecs(Ecosystem.PYTHON, '==2.3.1', '>=2,<4')).toEqual({ ok: true, spec: '==2.3.1,>=2,<4' });
    expect(combineVersionSpecs(Ecosystem.PYTHON, '>=2,<3', '>=2,<4')).toEqual({ ok: true, spec: '>=2,<3,<4' });
    expect(combineVersionSpecs(Ecosystem.PYTHON, '>=2', '')).toEqual({ ok: true, spec: '>=2' });
  });

  it('combines npm ranges: a subset as is, an overlap as AND, and refuses ranges that do not meet', () => {
    expect(combineVersionSpecs(Ecosystem.NPM, '^4.1.0', '^4')).toEqual({ ok: true, spec: '^4.1.0' });
    expect(combineVersionSpecs(Ecosystem.NPM, '', '^4')).toEqual({ ok: true, spec: '^4' });
    expect(combineVersionSpecs(Ecosystem.NPM, '>=3.5', '^4')).toEqual({ ok: true, spec: '>=3.5 ^4' });
    expect(combineVersionSpecs(Ecosystem.NPM, '>=3.5', '^3 || ^4')).toEqual({ ok: true, spec: '>=3.5 ^3 || >=3.5 ^4' });
    expect(combineVersionSpecs(Ecosystem.NPM, '^2 || ^3', '>=3.1 <5')).toEqual({ ok: true, spec: '^3 >=3.1 <5' });
    expect(combineVersionSpecs(Ecosystem.NPM, '3 - 5', '^4')).toEqual({ ok: true, spec: '>=3.0.0 <6.0.0-0 ^4' });
    expect(combineVersionSpecs(Ecosystem.NPM, '^2', '^3 || ^4')).toEqual({ ok: false, problem: '^2 does not overlap the allowed range ^3 || ^4' });
  });
});

describe('installed versions against specifiers', () => {
  const satisfies = (version: string, spec: string) => versionSatisfies(Ecosystem.PYTHON, version, normalizeVersionSpec(Ecosystem.PYTHON, spec));

  it('checks an exact PEP 440 version against every clause, as pip checks an installed one', () => {
    expect(satisfies('2.2.2', '')).toBe(true);
    expect(satisfies('2.2.2', '>=2,<4')).toBe(true);
    expect(satisfies('2.2.2', '>=3')).toBe(false);
    expect(satisfies('2.2.2', '>= 2.2, != 2.2.2')).toBe(false);
    expect(satisfies('6.0', '>=5.4')).toBe(true);
    expect(satisfies('1.4.46', '>=1.4')).toBe(true);
    expect(satisfies('1.4.46', '>=2')).toBe(false);
    expect(satisfies('2022.7.1', '>2022.1')).toBe(true);
    // 1.0 and 1 are one version; wildcards match a release prefix.
    expect(satisfies('1.0', '==1')).toBe(true);
    expect(satisfies('1.4.46', '==1.4.*')).toBe(true);
    expect(satisfies('1.5', '==1.4.*')).toBe(false);
    expect(satisfies('1.5', '!=1.4.*')).toBe(true);
    // ~=2.2 is >=2.2,==2.*; ~=1.4.5 is >=1.4.5,==1.4.*.
    expect(satisfies('2.9', '~=2.2')).toBe(true);
    expect(satisfies('3.0', '~=2.2')).toBe(false);
    expect(satisfies('1.4.46', '~=1.4.5')).toBe(true);
    expect(satisfies('1.5.0', '~=1.4.5')).toBe(false);
    expect(satisfies('1.4.4', '~=1.4.5')).toBe(false);
  });

  it('orders pre-, post- and dev-releases and local labels by PEP 440', () => {
    expect(satisfies('2.0rc1', '<2')).toBe(false); // <2 takes no pre-release of 2
    expect(satisfies('2.0rc1', '<2.0rc2')).toBe(true);
    expect(satisfies('2.0rc1', '>=2.0b1')).toBe(true);
    expect(satisfies('2.0.dev1', '<2.0a1')).toBe(true);
    expect(satisfies('1.7.post1', '>1.7')).toBe(false); // >1.7 takes no post-release of 1.7
    expect(satisfies('1.7.post2', '>1.7.post1')).toBe(true);
    expect(satisfies('1.7.post1', '>=1.7')).toBe(true);
    expect(satisfies('1.0.0+repack', '==1.0')).toBe(true);
    expect(satisfies('1.0.0+repack', '==1.0+other')).toBe(false);
    expect(satisfies('1!1.0', '>=2')).toBe(true);
    expect(satisfies('2.2.2', '===2.2.2')).toBe(true);
    expect(satisfies('2.2.2', '===2.2')).toBe(false);
  });

  it('checks npm versions against semver ranges, and an invalid version or range against nothing', () => {
    expect(versionSatisfies(Ecosystem.NPM, '3.23.8', '^3 || ^4')).toBe(true);
    expect(versionSatisfies(Ecosystem.NPM, '2.1.0', '^3 || ^4')).toBe(false);
    expect(versionSatisfies(Ecosystem.NPM, '4.0.0-beta.1', '^4.0.0-alpha')).toBe(true);
    expect(versionSatisfies(Ecosystem.NPM, 'latest', '')).toBe(false);
    expect(versionSatisfies(Ecosystem.PYTHON, '2.2.2', '^2')).toBe(false);
  });

  it('says what is wrong with an exact version', () => {
    expect(versionProblem(Ecosystem.PYTHON, '2022.9.24')).toBeUndefined();
    expect(versionProblem(Ecosystem.PYTHON, '1.0.post1')).toBeUndefined();
    expect(versionProblem(Ecosystem.PYTHON, '>=2')).toBe('">=2" is not a PEP 440 version (write e.g. "2.2.2" or "1.0.post1")');
    expect(versionProblem(Ecosystem.NPM, '3.23')).toBe('"3.23" is not a semver version (write e.g. "3.23.8")');
    expect(versionProblem(Ecosystem.NPM, ' ')).toBe('must not be empty');
  });
});

describe('the sandbox image a policy knows', () => {
  const onImage = (sandboxImage: string, changes: Partial<DependencyPolicy> = {}): DependencyPolicy => ({ ...defaultDependencyPolicy, sandboxImage, ...changes });
  const onData = onImage('ratchet-sandbox:3-data');

  it('is found by its reference, with or without a registry, never by a digest', () => {
    expect(sandboxImagePackages(onData)?.image).toBe('ratchet-sandbox:3-data');
    expect(sandboxImagePackages(onImage('registry.example.com/team/ratchet-sandbox:3-data'))?.image).toBe('ratchet-sandbox:3-data');
    expect(sandboxImagePackages(onImage('ratchet-sandbox:3-data@sha256:0123'))?.image).toBe('ratchet-sandbox:3-data');
    expect(sandboxImagePackages(onImage('ratchet-sandbox:3'))).toBeUndefined();
    expect(sandboxImagePackages(onImage('not-ratchet-sandbox:3-data'))).toBeUndefined();
    expect(sandboxImagePackages(defaultDependencyPolicy)).toBeUndefined();
  });

  it('provides what the image has, without installing it, when its version fits the request and the allowlist', () => {
    expect(judge(Ecosystem.PYTHON, 'Flask', '', none, onData)).toEqual({
      verdict: DependencyVerdict.ALLOWED,
      reason: 'allowed: the sandbox image ratchet-sandbox:3-data has flask 2.2.2, so it is not installed (images.ratchet-sandbox:3-data.python in config/dependencies.yaml)',
      installSpec: '',
      provided: true,
    });
    expect(judge(Ecosystem.PYTHON, 'flask', '>=2.2,<3', none, onData)).toMatchObject({ verdict: DependencyVerdict.ALLOWED, provided: true });
    // Not allowlisted, but the image has it: no install, no person to ask.
    expect(judge(Ecosystem.PYTHON, 'Werkzeug', '', none, onData)).toMatchObject({ verdict: DependencyVerdict.ALLOWED, provided: true });
    expect(judge(Ecosystem.PYTHON, 'PyYAML', '', none, onData)).toMatchObject({ verdict: DependencyVerdict.ALLOWED, provided: true, reason: expect.stringContaining('has pyyaml 6.0') });
  });

  it('installs another version when the image has one the request or the allowlist does not take', () => {
    expect(judge(Ecosystem.PYTHON, 'flask', '>=3', none, onData)).toEqual({
      verdict: DependencyVerdict.ALLOWED,
      reason: "allowed by config/dependencies.yaml (python.allow: flask >=2,<4); the sandbox image's flask 2.2.2 is outside >=3,>=2,<4, so it would be installed",
      installSpec: '>=3,>=2,<4',
    });
    expect(judge(Ecosystem.PYTHON, 'werkzeug', '>=3', none, onData)).toMatchObject({ verdict: DependencyVerdict.NEEDS_APPROVAL, reason: expect.stringMatching(/^needs approval: not in the allowlist \(python.default: ask\); the sandbox image's werkzeug 2.2.2 is outside >=3/) });
    const strict = onImage('ratchet-sandbox:3-data', { python: { ...defaultDependencyPolicy.python, allow: [{ name: 'pandas', version: '>=2' }] } });
    expect(judge(Ecosystem.PYTHON, 'pandas', '', none, strict)).toMatchObject({ verdict: DependencyVerdict.ALLOWED, installSpec: '>=2', reason: expect.stringContaining("the sandbox image's pandas 1.5.3 is outside >=2") });
  });

  it('installs as before on an image it does not list, and lets the denylist win over the image', () => {
    expect(judge(Ecosystem.PYTHON, 'flask', '', none, onImage('ratchet-sandbox:3'))).toEqual({ verdict: DependencyVerdict.ALLOWED, reason: 'allowed by config/dependencies.yaml (python.allow: flask >=2,<4)', installSpec: '>=2,<4' });
    expect(judge(Ecosystem.PYTHON, 'werkzeug', '', none, onImage('ratchet-sandbox:3'))).toMatchObject({ verdict: DependencyVerdict.NEEDS_APPROVAL });
    const denied = onImage('ratchet-sandbox:3-data', { python: { ...defaultDependencyPolicy.python, deny: [{ name: 'requests', reason: 'use urllib.request' }] } });
    expect(judge(Ecosystem.PYTHON, 'requests', '', none, denied)).toMatchObject({ verdict: DependencyVerdict.DENIED, reason: 'denied by config/dependencies.yaml: requests: use urllib.request' });
  });

  it('counts an undeclared import of what the image has as provided: fine as it is, nothing to install', () => {
    const result = check({ imports: [imported('Flask', 'flask', ['app.py', 1]), imported('Werkzeug', 'werkzeug.exceptions', ['app.py', 2])] }, onData);
    expect(result.verdict).toBe(DependencyAction.ALLOW);
    expect(result.findings).toEqual([]);
    expect(result.decisions.map((decision) => [decision.name, decision.verdict, decision.declared, decision.provided, decision.installSpec])).toEqual([
      ['Flask', DependencyVerdict.ALLOWED, false, true, ''],
      ['Werkzeug', DependencyVerdict.ALLOWED, false, true, ''],
    ]);
  });
});

describe('judging one package', () => {
  it('allows what the allowlist names, with its range, and says which entry', () => {
    expect(python('Flask')).toEqual({ verdict: DependencyVerdict.ALLOWED, reason: 'allowed by config/dependencies.yaml (python.allow: flask >=2,<4)', installSpec: '>=2,<4' });
    expect(python('flask', '==3.0.2')).toMatchObject({ verdict: DependencyVerdict.ALLOWED, installSpec: '==3.0.2,>=2,<4' });
    expect(python('PyYAML')).toMatchObject({ verdict: DependencyVerdict.ALLOWED, installSpec: '>=5.4' });
    expect(python('python_dateutil')).toMatchObject({ verdict: DependencyVerdict.ALLOWED, installSpec: '', reason: 'allowed by config/dependencies.yaml (python.allow: python-dateutil)' });
    expect(python('requests[socks]')).toMatchObject({ verdict: DependencyVerdict.ALLOWED });
    expect(npm('zod', '^3.22')).toMatchObject({ verdict: DependencyVerdict.ALLOWED, installSpec: '^3.22', reason: 'allowed by config/dependencies.yaml (npm.allow: zod ^3 || ^4)' });
    expect(npm('lodash')).toMatchObject({ verdict: DependencyVerdict.ALLOWED, installSpec: '^4.17.21' });
    expect(npm('lodash', '^4')).toMatchObject({ verdict: DependencyVerdict.ALLOWED, installSpec: '^4 ^4.17.21' });
    expect(npm('chalk', 'latest')).toMatchObject({ verdict: DependencyVerdict.ALLOWED, installSpec: '' });
  });

  it('denies an npm range outside the allowed one', () => {
    expect(npm('zod', '^2')).toMatchObject({
      verdict: DependencyVerdict.DENIED,
      ruleId: DependencyRuleId.INVALID_SPEC,
      reason: 'denied: zod ^2 does not overlap the allowed range ^3 || ^4 (npm.allow: zod ^3 || ^4 in config/dependencies.yaml)',
    });
  });

  it('denies what the denylist names, with its reason, whatever the spelling', () => {
    expect(python('PyCrypto')).toMatchObject({
      verdict: DependencyVerdict.DENIED,
      ruleId: DependencyRuleId.DENIED,
      reason: 'denied by config/dependencies.yaml: pycrypto: unmaintained since 2013, use cryptography',
      installSpec: '',
    });
    expect(npm('Event-Stream')).toMatchObject({ verdict: DependencyVerdict.DENIED, reason: expect.stringContaining('event-stream: was compromised in 2018') });
    // Approval does not lift a denial.
    expect(python('pycrypto', '', new Set(['pycrypto']))).toMatchObject({ verdict: DependencyVerdict.DENIED });
  });

  it('allows what the sandbox image provides, without installing it', () => {
    expect(python('pytest', '>=7')).toEqual({
      verdict: DependencyVerdict.ALLOWED,
      reason: 'allowed: the sandbox image provides it, so it is not installed (python.provided: pytest)',
      installSpec: '',
      provided: true,
    });
  });

  it('denies likely typosquats of allowed and well-known packages', () => {
    expect(python('flaks')).toMatchObject({ verdict: DependencyVerdict.DENIED, ruleId: DependencyRuleId.TYPOSQUAT, reason: 'denied: "flaks" looks like flask, a likely typosquat' });
    expect(python('reqeusts')).toMatchObject({ ruleId: DependencyRuleId.TYPOSQUAT, reason: expect.stringContaining('looks like requests') });
    expect(python('djnago')).toMatchObject({ ruleId: DependencyRuleId.TYPOSQUAT, reason: expect.stringContaining('looks like django') });
    expect(npm('expres')).toMatchObject({ ruleId: DependencyRuleId.TYPOSQUAT, reason: expect.stringContaining('looks like express') });
    expect(npm('@types/nodee')).toMatchObject({ ruleId: DependencyRuleId.TYPOSQUAT, reason: expect.stringContaining('looks like @types/node') });
    // Approval does not lift it either; the allowlist does.
    expect(python('flaks', '', new Set(['flaks']))).toMatchObject({ verdict: DependencyVerdict.DENIED });
    expect(judge(Ecosystem.PYTHON, 'flaks', '', none, withPython({ allow: [...defaultDependencyPolicy.python.allow, { name: 'flaks' }] }))).toMatchObject({ verdict: DependencyVerdict.ALLOWED });
    // Real neighbours of real packages are not typosquats.
    expect(python('psycopg')).toMatchObject({ verdict: DependencyVerdict.NEEDS_APPROVAL });
    expect(npm('preact')).toMatchObject({ verdict: DependencyVerdict.NEEDS_APPROVAL });
  });

  it('denies invalid names and version specifiers', () => {
    expect(python('flask>=2')).toMatchObject({ verdict: DependencyVerdict.DENIED, ruleId: DependencyRuleId.INVALID_SPEC, reason: expect.stringContaining('put the version in version_spec') });
    expect(python('flask', '^2')).toMatchObject({ verdict: DependencyVerdict.DENIED, ruleId: DependencyRuleId.INVALID_SPEC, reason: expect.stringContaining('is not a PEP 440 version specifier') });
    expect(npm('left-pad', 'github:a/b')).toMatchObject({ verdict: DependencyVerdict.DENIED, ruleId: DependencyRuleId.INVALID_SPEC });
  });

  it('denies the standard library as a package', () => {
    expect(python('json')).toMatchObject({ verdict: DependencyVerdict.DENIED, ruleId: DependencyRuleId.DENIED, reason: 'denied: json is part of the Python standard library; import it, do not install it' });
    expect(npm('fs')).toMatchObject({ verdict: DependencyVerdict.DENIED, reason: expect.stringContaining('fs is a Node.js built-in module (node:fs)') });
  });

  it('asks about anything else unless a person approved it, and follows the default', () => {
    expect(python('django', '>=5')).toEqual({
      verdict: DependencyVerdict.NEEDS_APPROVAL,
      reason: 'needs approval: not in the allowlist (python.default: ask)',
      installSpec: '>=5',
      ruleId: DependencyRuleId.NEEDS_APPROVAL,
      remediation: expect.stringContaining('A person must approve installing django'),
    });
    expect(python('Django', '>=5', new Set(['django']))).toEqual({ verdict: DependencyVerdict.ALLOWED, reason: 'allowed: approved for this task by a person', installSpec: '>=5', approved: true });
    const allow = withPython({ default: 'allow' });
    expect(judge(Ecosystem.PYTHON, 'django', '', none, allow)).toMatchObject({ verdict: DependencyVerdict.ALLOWED, reason: 'allowed: not in the allowlist (python.default: allow)' });
    const deny = withPython({ default: 'deny' });
    expect(judge(Ecosystem.PYTHON, 'django', '', none, deny)).toMatchObject({ verdict: DependencyVerdict.DENIED, ruleId: DependencyRuleId.DENIED, reason: 'denied: not in the allowlist (python.default: deny)' });
    expect(judge(Ecosystem.PYTHON, 'django', '', new Set(['django']), deny)).toMatchObject({ verdict: DependencyVerdict.ALLOWED });
  });
});

describe('checking a set of dependencies', () => {
  it('allows a plan of allowed packages, with no findings', () => {
    const result = check({ dependencies: [{ name: 'flask', versionSpec: '' }, { name: 'pytest', versionSpec: '' }] });
    expect(result.verdict).toBe(DependencyAction.ALLOW);
    expect(result.findings).toEqual([]);
    expect(result.decisions.map((decision) => [decision.name, decision.verdict, decision.declared, decision.provided])).toEqual([
      ['flask', DependencyVerdict.ALLOWED, true, false],
      ['pytest', DependencyVerdict.ALLOWED, true, true],
    ]);
  });

  it('asks when a declared package needs approval, and blocks when one is denied', () => {
    const ask = check({ dependencies: [{ name: 'flask', versionSpec: '' }, { name: 'django', versionSpec: '' }] });
    expect(ask.verdict).toBe(DependencyAction.ASK);
    expect(ask.findings).toEqual([
      expect.objectContaining({ ruleId: DependencyRuleId.NEEDS_APPROVAL, action: DependencyAction.ASK, snippet: 'django', path: '', line: 0, message: 'Python package django: needs approval: not in the allowlist (python.default: ask)' }),
    ]);
    const block = check({ dependencies: [{ name: 'django', versionSpec: '' }, { name: 'pycrypto', versionSpec: '' }] });
    expect(block.verdict).toBe(DependencyAction.BLOCK);
    expect(block.findings.map((finding) => [finding.ruleId, finding.action, finding.snippet])).toEqual([
      [DependencyRuleId.NEEDS_APPROVAL, DependencyAction.ASK, 'django'],
      [DependencyRuleId.DENIED, DependencyAction.BLOCK, 'pycrypto'],
    ]);
  });

  it('judges undeclared imports: an allowed one warns, one needing approval asks a person, a denied one blocks, a provided one is fine', () => {
    const result = check({
      dependencies: [{ name: 'flask', versionSpec: '>=3' }],
      imports: [
        imported('flask', 'flask', ['app.py', 1]),
        imported('PyYAML', 'yaml', ['app.py', 2], ['cli.py', 4]),
        imported('pytest', 'pytest', ['tests/test_app.py', 1]),
        imported('boto3', 'boto3', ['cli.py', 1]),
      ],
    });
    expect(result.verdict).toBe(DependencyAction.ASK);
    expect(result.decisions.map((decision) => ({ name: decision.name, verdict: decision.verdict, declared: decision.declared, importedAt: decision.importedAt, installSpec: decision.installSpec }))).toEqual([
      { name: 'flask', verdict: DependencyVerdict.ALLOWED, declared: true, importedAt: ['app.py:1'], installSpec: '>=3,>=2,<4' },
      { name: 'PyYAML', verdict: DependencyVerdict.ALLOWED, declared: false, importedAt: ['app.py:2', 'cli.py:4'], installSpec: '>=5.4' },
      { name: 'pytest', verdict: DependencyVerdict.ALLOWED, declared: false, importedAt: ['tests/test_app.py:1'], installSpec: '' },
      { name: 'boto3', verdict: DependencyVerdict.NEEDS_APPROVAL, declared: false, importedAt: ['cli.py:1'], installSpec: '' },
    ]);
    expect(result.findings).toEqual([
      expect.objectContaining({
        ruleId: DependencyRuleId.UNDECLARED_IMPORT,
        action: DependencyAction.WARN,
        path: 'app.py',
        line: 2,
        snippet: 'PyYAML',
        message: expect.stringContaining('Python package PyYAML (module yaml) is imported at app.py:2 but the plan does not declare it'),
      }),
      expect.objectContaining({
        ruleId: DependencyRuleId.UNDECLARED_IMPORT,
        action: DependencyAction.ASK,
        path: 'cli.py',
        snippet: 'boto3',
        message: expect.stringContaining("is imported at cli.py:1 but the plan does not declare it, and it needs a person's approval"),
        remediation: 'A person decides whether boto3 is installed for this task; if refused, rewrite the code without it.',
      }),
    ]);

    // A denied package imported without being declared blocks, whatever else asks.
    const denied = check({ dependencies: [], imports: [imported('boto3', 'boto3', ['cli.py', 1]), imported('pycrypto', 'Crypto', ['cli.py', 2])] });
    expect(denied.verdict).toBe(DependencyAction.BLOCK);
    expect(denied.findings.filter((finding) => finding.snippet === 'pycrypto').map((finding) => [finding.ruleId, finding.action])).toEqual([
      [DependencyRuleId.DENIED, DependencyAction.BLOCK],
      [DependencyRuleId.UNDECLARED_IMPORT, DependencyAction.BLOCK],
    ]);
  });

  it('warns only, for undeclared imports that are allowed', () => {
    const result = check({ imports: [imported('requests', 'requests', ['app.py', 3])] });
    expect(result.verdict).toBe(DependencyAction.WARN);
  });

  it('blocks an undeclared import that is denied, with the denial and the undeclared finding', () => {
    const result = check({ imports: [imported('flaks', 'flaks', ['app.py', 1])] });
    expect(result.verdict).toBe(DependencyAction.BLOCK);
    expect(result.findings.map((finding) => [finding.ruleId, finding.action])).toEqual([
      [DependencyRuleId.TYPOSQUAT, DependencyAction.BLOCK],
      [DependencyRuleId.UNDECLARED_IMPORT, DependencyAction.BLOCK],
    ]);
    expect(result.findings[1]!.remediation).toBe('Do not use flaks: rewrite the code without it.');
  });

  it('treats an approved undeclared import as allowed (a warning), and matches declared names by module or distribution', () => {
    expect(check({ imports: [imported('boto3', 'boto3', ['a.py', 1])], approved: ['Boto3'] }).verdict).toBe(DependencyAction.WARN);
    const declared = check({ dependencies: [{ name: 'pyyaml', versionSpec: '' }, { name: 'jose', versionSpec: '' }], imports: [imported('PyYAML', 'yaml', ['a.py', 1]), imported('python-jose', 'jose', ['a.py', 2])] });
    expect(declared.decisions.map((decision) => [decision.name, decision.declared, decision.importedAt])).toEqual([
      ['pyyaml', true, ['a.py:1']],
      ['jose', true, ['a.py:2']],
    ]);
  });

  it('refuses requests over the limits with INVALID_ARGUMENT', () => {
    const many = Array.from({ length: 201 }, (_, index) => ({ name: `package-${index}`, versionSpec: '' }));
    const refusal = (input: Partial<DependencyCheckInput>) => {
      try {
        check(input);
      } catch (error) {
        return error;
      }
      return undefined;
    };
    for (const [input, message] of [
      [{ dependencies: many }, '201 dependencies sent; CheckDependencies takes at most 200'],
      [{ dependencies: [{ name: '  ', versionSpec: '' }] }, 'dependencies[0].name is empty'],
      [{ dependencies: [{ name: 'x'.repeat(215), versionSpec: '' }] }, 'dependencies[0].name is 215 characters'],
      [{ dependencies: [{ name: 'x', versionSpec: '>'.repeat(257) }] }, 'dependencies[0].version_spec is 257 characters'],
      [{ approved: ['x'.repeat(215)] }, 'approved[0] is over 214 characters'],
    ] as const) {
      const error = refusal(input);
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining(message) });
    }
    expect(check({ dependencies: many.slice(0, 200) }).decisions).toHaveLength(200);
  });
});
