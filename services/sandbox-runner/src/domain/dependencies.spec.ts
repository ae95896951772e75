import { describe, expect, it } from '@jest/globals';
import { Language } from '@ratchet/contracts';
import { Ecosystem, ecosystemOf, installFailure, installPlan, layerEnvironment, layerKey, registryOf, requirementLines, resolvedFromDistInfo, resolvedFromPackageLock, type InstallFacts } from './dependencies';

const settings = { python: { indexUrl: 'https://pypi.org/simple', extraHosts: ['files.pythonhosted.org:443'] }, npm: { registry: 'https://registry.npmjs.org', extraHosts: [] } };
const dep = (name: string, versionSpec = '') => ({ name, versionSpec });

describe('requirement lines', () => {
  it('normalises Python names and specifiers, sorts them, and reads a bare version as ==', () => {
    expect(requirementLines(Ecosystem.PYTHON, [dep('Requests', ' >= 2.31 , <3 '), dep('ruamel.YAML', '0.18.6'), dep('attrs')])).toEqual({ lines: ['attrs', 'requests>=2.31,<3', 'ruamel-yaml==0.18.6'] });
    expect(requirementLines(Ecosystem.PYTHON, [dep('requests[socks]', '~=2.31')])).toEqual({ lines: ['requests[socks]~=2.31'] });
  });

  it('refuses what is not a package from the registry: options, URLs, paths, markers, duplicates', () => {
    const problem = (ecosystem: Ecosystem, ...dependencies: ReturnType<typeof dep>[]) => {
      const lines = requirementLines(ecosystem, dependencies);
      return 'problem' in lines ? lines.problem : undefined;
    };
    expect(problem(Ecosystem.PYTHON, dep('-e git+https://evil.example/x'))).toMatch(/not a valid Python package name/);
    expect(problem(Ecosystem.PYTHON, dep('requests', '@ https://evil.example/requests.whl'))).toMatch(/not a PEP 440 specifier/);
    expect(problem(Ecosystem.PYTHON, dep('requests', '>=2; python_version > "3"'))).toMatch(/not a PEP 440 specifier/);
    expect(problem(Ecosystem.PYTHON, dep('requests', '>=2'), dep('Requests', '<3'))).toMatch(/requests is listed twice, as requests>=2 and requests<3/);
    expect(problem(Ecosystem.NPM, dep('left-pad', 'github:evil/left-pad'))).toMatch(/not a semver range or tag/);
    expect(problem(Ecosystem.NPM, dep('left-pad', 'file:../../etc'))).toMatch(/not a semver range or tag/);
    expect(problem(Ecosystem.NPM, dep('Left-Pad'))).toMatch(/not a valid npm package name/);
  });

  it('keeps npm ranges and scoped names, and asks for latest when no range is given', () => {
    expect(requirementLines(Ecosystem.NPM, [dep('zod', '^3.23.0'), dep('@types/node', '>=20 <23'), dep('is-odd')])).toEqual({ lines: ['@types/node@>=20 <23', 'is-odd@latest', 'zod@^3.23.0'] });
  });

  it('maps languages to ecosystems', () => {
    expect([Language.LANGUAGE_PYTHON, Language.LANGUAGE_TYPESCRIPT, Language.LANGUAGE_JAVASCRIPT, Language.LANGUAGE_UNSPECIFIED].map(ecosystemOf)).toEqual(['python', 'npm', 'npm', undefined]);
  });
});

describe('the layer key', () => {
  const registry = registryOf(Ecosystem.PYTHON, settings);
  it('is the same for the same requirements in any order and changes with the registry or the image', () => {
    const key = layerKey({ ecosystem: Ecosystem.PYTHON, lines: ['b==1', 'a==2'], registry, image: 'sha256:1' });
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(layerKey({ ecosystem: Ecosystem.PYTHON, lines: ['a==2', 'b==1'], registry, image: 'sha256:1' })).toBe(key);
    expect(layerKey({ ecosystem: Ecosystem.PYTHON, lines: ['a==2', 'b==1'], registry, image: 'sha256:2' })).not.toBe(key);
    expect(layerKey({ ecosystem: Ecosystem.PYTHON, lines: ['a==2', 'b==1'], registry: registryOf(Ecosystem.PYTHON, { ...settings, python: { indexUrl: 'https://mirror.example/simple', extraHosts: [] } }), image: 'sha256:1' })).not.toBe(key);
  });

  it('lets the proxy reach the registry and its extra hosts, with default ports', () => {
    expect(registry.hosts).toEqual(['files.pythonhosted.org:443', 'pypi.org:443']);
    expect(registryOf(Ecosystem.NPM, { ...settings, npm: { registry: 'http://Mirror.example:8081/npm/', extraHosts: [] } }).hosts).toEqual(['mirror.example:8081']);
  });
});

describe('the install plan and the job environment', () => {
  it('installs with pip into the layer directory from the configured index only, through the relay', () => {
    const plan = installPlan(Ecosystem.PYTHON, ['greeter>=1'], { url: 'http://127.0.0.1:8080/simple', hosts: ['127.0.0.1:8080'] }, { timeoutSeconds: 60, caBundle: 'PEM' });
    expect(plan.files.find((file) => file.path === 'requirements.txt')?.content).toBe('greeter>=1\n');
    expect(plan.commands.at(-1)?.argv).toEqual(expect.arrayContaining(['--target', '/work/layer/python', '--index-url', 'http://127.0.0.1:8080/simple', '--trusted-host', '127.0.0.1', '--no-cache-dir']));
    expect(plan.env).toMatchObject({ HTTPS_PROXY: 'http://127.0.0.1:3128', PIP_CERT: '/work/.ratchet/ca.pem', TMPDIR: '/work/.tmp' });
  });

  it('installs with npm from the configured registry, with a package.json of the dependencies', () => {
    const plan = installPlan(Ecosystem.NPM, ['@types/node@>=20 <23', 'is-odd@^3.0.1'], { url: 'https://registry.npmjs.org', hosts: ['registry.npmjs.org:443'] }, { timeoutSeconds: 300 });
    expect(JSON.parse(plan.files.find((file) => file.path === 'layer/npm/package.json')!.content).dependencies).toEqual({ '@types/node': '>=20 <23', 'is-odd': '^3.0.1' });
    expect(plan.commands.at(-1)).toMatchObject({ workingDirectory: 'layer/npm', argv: expect.arrayContaining(['npm', 'install', '--omit=dev', '--registry=https://registry.npmjs.org']) });
    expect(plan.env).toMatchObject({ npm_config_https_proxy: 'http://127.0.0.1:3128', npm_config_cache: '/work/.npm-cache' });
  });

  it('puts the layer first on the search paths and keeps what the job set', () => {
    expect(layerEnvironment(Ecosystem.PYTHON, { PYTHONPATH: 'src' })).toMatchObject({ PYTHONPATH: '/deps/python:src', PATH: '/deps/python/bin:/usr/local/bin:/usr/bin:/bin' });
    expect(layerEnvironment(Ecosystem.NPM, { NODE_OPTIONS: '--max-old-space-size=256' })).toMatchObject({ NODE_PATH: '/deps/npm/node_modules', NODE_OPTIONS: '--import=file:///deps/ratchet-resolve.mjs --max-old-space-size=256' });
  });
});

describe('what was installed', () => {
  it('reads pip dist-info directories and an npm package-lock', () => {
    expect(resolvedFromDistInfo([{ directory: 'Greeter-1.0.dist-info', metadata: 'Metadata-Version: 2.1\nName: Greeter\nVersion: 1.0\n\nLong description\nName: not-this' }, { directory: 'tiny_helper-2.0.dist-info' }])).toEqual(['greeter==1.0', 'tiny-helper==2.0']);
    const lock = { lockfileVersion: 3, packages: { '': { dependencies: {} }, 'node_modules/is-odd': { version: '3.0.1' }, 'node_modules/is-odd/node_modules/is-number': { version: '6.0.0' }, 'node_modules/@scope/pkg': { version: '1.2.3' }, 'node_modules/linked': { link: true } } };
    expect(resolvedFromPackageLock(JSON.stringify(lock))).toEqual(['@scope/pkg==1.2.3', 'is-number==6.0.0', 'is-odd==3.0.1']);
    expect(resolvedFromPackageLock('not json')).toEqual([]);
  });
});

describe('why an install failed', () => {
  const facts = (overrides: Partial<InstallFacts>): InstallFacts => ({
    ecosystem: Ecosystem.PYTHON,
    registryUrl: 'https://pypi.org/simple',
    exitCode: 1,
    timedOut: false,
    oomKilled: false,
    output: '',
    refusedHosts: [],
    unreachable: [],
    tooLarge: false,
    timeoutSeconds: 300,
    maxLayerMegabytes: 512,
    memoryMegabytes: 1024,
    ...overrides,
  });

  it('names a package pip could not find, and a version it could not resolve', () => {
    expect(installFailure(facts({ output: 'ERROR: Could not find a version that satisfies the requirement nosuchpkg (from versions: none)\nERROR: No matching distribution found for nosuchpkg\n' }))).toBe(
      'the package nosuchpkg was not found on the index https://pypi.org/simple (pip: No matching distribution found for nosuchpkg); check its name',
    );
    expect(installFailure(facts({ output: 'ERROR: Could not find a version that satisfies the requirement tinyhelper>=99 (from versions: 1.0, 1.1)\nERROR: No matching distribution found for tinyhelper>=99\n' }))).toBe(
      'no version of tinyhelper matches >=99 (pip: No matching distribution found for tinyhelper>=99; the index has 1.0, 1.1)',
    );
  });

  it('names npm E404 and ETARGET failures', () => {
    const npm = (output: string) => installFailure(facts({ ecosystem: Ecosystem.NPM, registryUrl: 'https://registry.npmjs.org', output }));
    expect(npm("npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nosuch\nnpm error 404\nnpm error 404  The requested resource 'nosuch@latest' could not be found or you do not have permission to access it.\n")).toBe(
      'the package nosuch was not found on the registry https://registry.npmjs.org (npm E404); check its name',
    );
    expect(npm('npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/@scope%2fgone - Not found\n')).toMatch(/the package @scope\/gone was not found/);
    expect(npm('npm error code ETARGET\nnpm error notarget No matching version found for is-odd@^99.\n')).toBe('no version of is-odd matches ^99 (npm ETARGET)');
    expect(npm('npm error code 1\nnpm error path /work/layer/npm/node_modules/evil\nnpm error command failed\nnpm error command sh -c node install.js\n')).toBe('the install script of evil failed (sh -c node install.js)');
  });

  it('puts the limit, the refused host or the silent registry before what the installer made of it', () => {
    expect(installFailure(facts({ timedOut: true, output: 'ERROR: No matching distribution found for x' }))).toBe('the install timed out after 300 s (sandbox.dependencies.timeoutSeconds)');
    expect(installFailure(facts({ refusedHosts: ['exfil.example:8080'], output: 'Collecting phonehome\nerror: subprocess-exited-with-error\n' }))).toMatch(/^the install tried to reach exfil\.example:8080, which is not a configured registry.*\(the last package being installed was phonehome\)/);
    expect(installFailure(facts({ output: 'ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n' }))).toMatch(/^the install exceeded the size limit of 512 MB \(sandbox\.dependencies\.maxLayerMegabytes\)/);
    expect(installFailure(facts({ unreachable: [{ host: 'pypi.org:443', reason: 'ECONNREFUSED' }], output: 'ERROR: No matching distribution found for x' }))).toBe(
      'the registry https://pypi.org/simple did not answer (pypi.org:443: ECONNREFUSED); check sandbox.dependencies.python.indexUrl, or try again when it is up',
    );
  });

  it('says which package failed to build from source', () => {
    const output = 'Collecting brokenpkg\n  error: subprocess-exited-with-error\n  \n  × Getting requirements to build wheel did not run successfully.\n  │ exit code: 1\n  ╰─> [2 lines of output]\n      RuntimeError: needs a C compiler\n      [end of output]\n';
    expect(installFailure(facts({ output }))).toBe('brokenpkg could not be built from source (pip: getting requirements to build wheel failed: RuntimeError: needs a C compiler)');
  });
});
