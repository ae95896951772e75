import { createHash } from 'node:crypto';
import { Language, type Dependency, type SandboxCommand, type SourceFile } from '@ratchet/contracts';

/**
 * The dependency install step's pure parts: which ecosystem a job's
 * dependencies belong to, their requirement lines, the key of the layer
 * they make, the install sandbox's files, commands and environment, the
 * test sandbox's environment, and the reasons an install failed, read from
 * pip's and npm's output.
 */

export const Ecosystem = { PYTHON: 'python', NPM: 'npm' } as const;
export type Ecosystem = (typeof Ecosystem)[keyof typeof Ecosystem];

/**
 * Version of the layer's layout (directories, the resolve hook); part of the
 * key, so a runner that lays layers out differently never reuses an old one.
 */
export const layerLayout = 1;
/** Where the layer is mounted, read-only, in the job's sandbox. */
export const layerMountPoint = '/deps';
/** Where the install sandbox sees the directory holding the proxy's socket. */
export const proxyMountPoint = '/run/ratchet-proxy';
/** The proxy's socket, in that directory. */
export const proxySocketName = 'proxy.sock';
/** The loopback port the supervisor relays to the proxy socket, inside the install sandbox. */
export const relayPort = 3128;
/** The directory, under the install sandbox's work directory, whose files become the layer. */
export const installedDirectory = 'layer';
/** The layer's completion marker, written last. */
export const layerManifestName = 'layer.json';
/** The npm layer's resolve hook, loaded with --import by every node process of the job. */
export const resolveHookName = 'ratchet-resolve.mjs';
/** Most dependencies one job may list. */
export const maxDependencies = 200;

/** What a complete layer's marker records. */
export interface LayerManifest {
  readonly layout: number;
  readonly key: string;
  readonly ecosystem: Ecosystem;
  readonly requirements: readonly string[];
  readonly resolved: readonly string[];
  readonly sizeBytes: number;
  readonly image: string;
  readonly registry: string;
  readonly createdAt: string;
}

/** The registry an ecosystem installs from, and every host:port the install proxy lets through. */
export interface RegistrySettings {
  readonly url: string;
  readonly hosts: readonly string[];
}

/** The ecosystem of a job's language: python for Python, npm for JavaScript and TypeScript; undefined for others. */
export function ecosystemOf(language: Language): Ecosystem | undefined {
  if (language === Language.LANGUAGE_PYTHON) return Ecosystem.PYTHON;
  if (language === Language.LANGUAGE_JAVASCRIPT || language === Language.LANGUAGE_TYPESCRIPT) return Ecosystem.NPM;
  return undefined;
}

/** "host:port" of an http(s) URL (default ports filled in), lower case. */
export function hostPortOf(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port !== '' ? parsed.port : parsed.protocol === 'http:' ? '80' : '443';
  return `${parsed.hostname.toLowerCase()}:${port}`;
}

/** The registry of `ecosystem` from the `sandbox.dependencies` settings: its URL and the hosts the proxy allows. */
export function registryOf(ecosystem: Ecosystem, settings: { readonly python: { readonly indexUrl: string; readonly extraHosts: readonly string[] }; readonly npm: { readonly registry: string; readonly extraHosts: readonly string[] } }): RegistrySettings {
  const url = ecosystem === Ecosystem.PYTHON ? settings.python.indexUrl : settings.npm.registry;
  const extra = ecosystem === Ecosystem.PYTHON ? settings.python.extraHosts : settings.npm.extraHosts;
  return { url, hosts: [...new Set([hostPortOf(url), ...extra.map((host) => host.toLowerCase())])].sort() };
}

const pythonName = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const pythonExtras = /^\[\s*[A-Za-z0-9][A-Za-z0-9._-]*(?:\s*,\s*[A-Za-z0-9][A-Za-z0-9._-]*)*\s*\]$/;
const pythonClause = /^(?:~=|===|==|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+$/;
const pythonBareVersion = /^[0-9][A-Za-z0-9.+!_-]*$/;
const npmName = /^(?:@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/;
// Semver ranges and dist-tags; no ':' or '/', so no URL, git, file: or npm: alias can slip in.
const npmSpec = /^[A-Za-z0-9.*^~<>=| +_-]+$/;

/** PEP 503's normalised project name: lower case, runs of "-", "_", "." as one "-". */
export function normalisePythonName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/**
 * The requirement lines of `dependencies` for `ecosystem`, sorted and
 * normalised (what the layer key hashes): `name[extras]<spec>` for pip,
 * `name@spec` for npm. A bare Python version means `==`; an empty spec means
 * any version (pip) or the `latest` tag (npm). Names and specs are checked,
 * so nothing but a package from the configured registry can be asked for (no
 * URLs, paths, git sources or pip options).
 *
 * @returns the lines, or `problem`: one sentence naming the bad dependency.
 */
export function requirementLines(ecosystem: Ecosystem, dependencies: readonly Dependency[]): { lines: string[] } | { problem: string } {
  if (dependencies.length > maxDependencies) return { problem: `the job lists ${dependencies.length} dependencies; at most ${maxDependencies} are installed for one job` };
  const byName = new Map<string, string>();
  for (const dependency of dependencies) {
    const parsed = ecosystem === Ecosystem.PYTHON ? pythonRequirement(dependency) : npmRequirement(dependency);
    if ('problem' in parsed) return parsed;
    const earlier = byName.get(parsed.name);
    if (earlier !== undefined && earlier !== parsed.line) return { problem: `${parsed.name} is listed twice, as ${earlier} and ${parsed.line}; list it once with one version specifier` };
    byName.set(parsed.name, parsed.line);
  }
  return { lines: [...byName.values()].sort() };
}

function pythonRequirement(dependency: Dependency): { name: string; line: string } | { problem: string } {
  const raw = dependency.name.trim();
  const bracket = raw.indexOf('[');
  const name = bracket === -1 ? raw : raw.slice(0, bracket).trim();
  const extras = bracket === -1 ? '' : raw.slice(bracket).replace(/\s+/g, '');
  if (!pythonName.test(name) || name.length > 200) return { problem: `dependency ${JSON.stringify(dependency.name.slice(0, 100))} is not a valid Python package name (letters, digits, ".", "_" and "-")` };
  if (extras !== '' && !pythonExtras.test(extras)) return { problem: `dependency ${JSON.stringify(dependency.name.slice(0, 100))}: the extras ${JSON.stringify(extras)} are not a list of names in brackets` };
  const spec = dependency.versionSpec.trim();
  let clauses: string[] = [];
  if (pythonBareVersion.test(spec)) clauses = [`==${spec}`];
  else if (spec !== '') clauses = spec.split(',').map((clause) => clause.replace(/\s+/g, ''));
  const bad = clauses.find((clause) => !pythonClause.test(clause));
  if (bad !== undefined) return { problem: `dependency ${name}: the version specifier ${JSON.stringify(dependency.versionSpec.slice(0, 100))} is not a PEP 440 specifier such as ">=2,<3" or "==1.4.2"` };
  const normalised = normalisePythonName(name);
  return { name: normalised, line: `${normalised}${extras.toLowerCase()}${clauses.join(',')}` };
}

function npmRequirement(dependency: Dependency): { name: string; line: string } | { problem: string } {
  const name = dependency.name.trim();
  if (!npmName.test(name) || name.length > 214) return { problem: `dependency ${JSON.stringify(dependency.name.slice(0, 100))} is not a valid npm package name (lower case, optionally @scope/name)` };
  const spec = dependency.versionSpec.trim() === '' ? 'latest' : dependency.versionSpec.trim().replace(/\s+/g, ' ');
  if (!npmSpec.test(spec) || spec.length > 100) return { problem: `dependency ${name}: the version specifier ${JSON.stringify(dependency.versionSpec.slice(0, 100))} is not a semver range or tag such as "^4.2.0" (URLs, git, file: and npm: sources are not installed)` };
  return { name, line: `${name}@${spec}` };
}

/**
 * The key of the layer `lines` make: sha256 over the layout version, the
 * ecosystem, the sorted requirement lines, the registry and its allowed hosts,
 * and the image (its id where the driver knows it), hex.
 */
export function layerKey(input: { readonly ecosystem: Ecosystem; readonly lines: readonly string[]; readonly registry: RegistrySettings; readonly image: string }): string {
  const canonical = JSON.stringify({
    layout: layerLayout,
    ecosystem: input.ecosystem,
    requirements: [...input.lines].sort(),
    registry: { url: input.registry.url, hosts: [...input.registry.hosts].sort() },
    image: input.image,
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/** What the install sandbox runs: its files, its commands and their environment. */
export interface InstallPlan {
  readonly files: SourceFile[];
  readonly commands: SandboxCommand[];
  readonly env: Record<string, string>;
}

/** Where the install sandbox finds the CA bundle, relative to its work directory. */
const caPath = '.ratchet/ca.pem';

/** Where the install sandbox's tools find the registry proxy (relayed on loopback), temporary files and, when one is configured, the CA bundle. */
export function installSandboxEnvironment(caBundle: string | undefined): Record<string, string> {
  const proxy = `http://127.0.0.1:${relayPort}`;
  const ca: Record<string, string> = caBundle === undefined ? {} : { SSL_CERT_FILE: `/work/${caPath}`, NODE_EXTRA_CA_CERTS: `/work/${caPath}`, PIP_CERT: `/work/${caPath}`, npm_config_cafile: `/work/${caPath}` };
  return { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy, NO_PROXY: '', no_proxy: '', TMPDIR: '/work/.tmp', npm_config_proxy: proxy, npm_config_https_proxy: proxy, npm_config_noproxy: '', ...ca };
}

/** The CA bundle as a file of the install sandbox (see installSandboxEnvironment); none without one. */
export function caBundleFiles(caBundle: string | undefined): SourceFile[] {
  return caBundle === undefined ? [] : [{ path: caPath, content: caBundle }];
}

/**
 * The install sandbox's job for `lines`: pip into `layer/python` (a
 * --target directory) or npm into `layer/npm/node_modules`, from the
 * registry only, through the proxy the supervisor relays on loopback, with
 * temporary files and caches inside the size-capped work directory, so the
 * size limit covers all of it.
 */
export function installPlan(ecosystem: Ecosystem, lines: readonly string[], registry: RegistrySettings, options: { readonly timeoutSeconds: number; readonly caBundle?: string }): InstallPlan {
  const env = installSandboxEnvironment(options.caBundle);
  const files = caBundleFiles(options.caBundle);
  const mkdir: SandboxCommand = { name: 'prepare', argv: ['mkdir', '-p', '.tmp', `${installedDirectory}/${ecosystem}`], workingDirectory: '', timeout: undefined };
  if (ecosystem === Ecosystem.PYTHON) {
    files.push({ path: 'requirements.txt', content: `${lines.join('\n')}\n` });
    const parsed = new URL(registry.url);
    const argv = [
      'python3', '-m', 'pip', 'install',
      '--target', `/work/${installedDirectory}/python`,
      '--no-cache-dir', '--disable-pip-version-check', '--progress-bar', 'off', '--no-input', '--no-warn-script-location',
      // One retry, short timeouts: a registry that is down fails in seconds, not minutes.
      '--retries', '1', '--timeout', '20',
      '--index-url', registry.url,
      ...(parsed.protocol === 'http:' ? ['--trusted-host', parsed.hostname] : []),
      '-r', 'requirements.txt',
    ];
    return {
      files,
      commands: [mkdir, { name: 'install', argv, workingDirectory: '', timeout: undefined }],
      env: { ...env, PIP_NO_INPUT: '1', PIP_ROOT_USER_ACTION: 'ignore' },
    };
  }
  const dependencies: Record<string, string> = {};
  for (const line of lines) {
    const at = line.lastIndexOf('@');
    dependencies[line.slice(0, at)] = line.slice(at + 1);
  }
  files.push({ path: `${installedDirectory}/npm/package.json`, content: `${JSON.stringify({ name: 'ratchet-dependency-layer', version: '0.0.0', private: true, dependencies }, null, 2)}\n` });
  const argv = [
    'npm', 'install', '--no-audit', '--no-fund', '--omit=dev', '--no-update-notifier',
    `--registry=${registry.url}`,
    '--fetch-retries=1', '--fetch-retry-mintimeout=1000', '--fetch-retry-maxtimeout=5000', `--fetch-timeout=${Math.min(60, options.timeoutSeconds) * 1000}`,
  ];
  return {
    files,
    commands: [mkdir, { name: 'install', argv, workingDirectory: `${installedDirectory}/npm`, timeout: undefined }],
    env: { ...env, npm_config_cache: '/work/.npm-cache', npm_config_update_notifier: 'false' },
  };
}

/** Joins a layer path onto a job's own value of a search-path variable (the layer first). */
function prepend(value: string, existing: string | undefined, separator: string): string {
  return existing === undefined || existing === '' ? value : `${value}${separator}${existing}`;
}

const defaultPath = '/usr/local/bin:/usr/bin:/bin';

/**
 * The job's environment with the layer in it: for Python PYTHONPATH (and the
 * layer's scripts on PATH); for npm NODE_PATH for require(), the resolve hook
 * (NODE_OPTIONS=--import) for import, and the packages' bins on PATH. A
 * value the job sets itself is kept after the layer's.
 */
export function layerEnvironment(ecosystem: Ecosystem, env: Readonly<Record<string, string>>): Record<string, string> {
  if (ecosystem === Ecosystem.PYTHON) {
    return {
      ...env,
      PYTHONPATH: prepend(`${layerMountPoint}/python`, env['PYTHONPATH'], ':'),
      PATH: prepend(`${layerMountPoint}/python/bin`, env['PATH'] ?? defaultPath, ':'),
    };
  }
  return {
    ...env,
    NODE_PATH: prepend(`${layerMountPoint}/npm/node_modules`, env['NODE_PATH'], ':'),
    NODE_OPTIONS: prepend(`--import=file://${layerMountPoint}/${resolveHookName}`, env['NODE_OPTIONS'], ' '),
    PATH: prepend(`${layerMountPoint}/npm/node_modules/.bin`, env['PATH'] ?? defaultPath, ':'),
  };
}

/**
 * The npm layer's resolve hook (node:module registerHooks, in-thread, so it
 * applies to import and require alike, and to TypeScript run by type
 * stripping): a bare specifier the job's own files cannot resolve is
 * resolved again from the layer's package.json. node_modules is not mounted
 * into /work, so the job's files, the output walk and the tamper checks see
 * the job's files only.
 */
export const resolveHookSource = `// Written by the Ratchet sandbox runner: packages of the dependency layer for import and require.
import { createRequire, registerHooks } from 'node:module';
import { pathToFileURL } from 'node:url';
const layerPackage = '${layerMountPoint}/npm/package.json';
const requireFromLayer = createRequire(layerPackage);
const bare = (specifier) => !/^(?:[./]|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(specifier);
let falling = false;
registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (error) {
      if (falling || !bare(specifier) || (error?.code !== 'ERR_MODULE_NOT_FOUND' && error?.code !== 'MODULE_NOT_FOUND')) throw error;
      falling = true;
      try {
        if (context.conditions?.includes('require')) return { url: pathToFileURL(requireFromLayer.resolve(specifier)).href, shortCircuit: true };
        return nextResolve(specifier, { ...context, parentURL: pathToFileURL(layerPackage).href });
      } catch {
        throw error;
      } finally {
        falling = false;
      }
    }
  },
});
`;

/** "name==version" of every package pip installed, from the dist-info directories (METADATA when readable, else the directory's name). */
export function resolvedFromDistInfo(entries: readonly { readonly directory: string; readonly metadata?: string }[]): string[] {
  const found = new Set<string>();
  for (const entry of entries) {
    const fromName = /^(.+)-([^-]+)\.dist-info$/.exec(entry.directory);
    const headers = (entry.metadata ?? '').split(/\r?\n\r?\n/)[0] ?? '';
    const name = /^Name:\s*(.+)$/m.exec(headers)?.[1]?.trim() ?? fromName?.[1];
    const version = /^Version:\s*(.+)$/m.exec(headers)?.[1]?.trim() ?? fromName?.[2];
    if (name !== undefined && version !== undefined) found.add(`${normalisePythonName(name)}==${version}`);
  }
  return [...found].sort();
}

/** "name==version" of every package in an npm package-lock.json (v2 or v3); empty when it cannot be read. */
export function resolvedFromPackageLock(text: string): string[] {
  let lock: { packages?: Record<string, { version?: unknown; link?: unknown }> };
  try {
    lock = JSON.parse(text) as typeof lock;
  } catch {
    return [];
  }
  const found = new Set<string>();
  for (const [location, entry] of Object.entries(lock.packages ?? {})) {
    const at = location.lastIndexOf('node_modules/');
    if (at === -1 || entry.link === true || typeof entry.version !== 'string') continue;
    found.add(`${location.slice(at + 'node_modules/'.length)}==${entry.version}`);
  }
  return [...found].sort();
}

/** What the runner saw of a failed install. */
export interface InstallFacts {
  readonly ecosystem: Ecosystem;
  readonly registryUrl: string;
  readonly exitCode: number;
  readonly timedOut: boolean;
  readonly oomKilled: boolean;
  /** The installer's stdout and stderr, control sequences removed. */
  readonly output: string;
  /** Hosts the proxy refused ("host:port"). */
  readonly refusedHosts: readonly string[];
  /** Allowed hosts the proxy could not reach, with the error. */
  readonly unreachable: readonly { readonly host: string; readonly reason: string }[];
  /** The exported files were over the size limit (read back by the runner). */
  readonly tooLarge: boolean;
  readonly timeoutSeconds: number;
  readonly maxLayerMegabytes: number;
  readonly memoryMegabytes: number;
}

/**
 * Why an install failed, in one paragraph naming the package, the host or
 * the limit, from what the runner saw and the installer's output. The order
 * matters: a timeout or a refused host explains the errors that follow it.
 */
export function installFailure(facts: InstallFacts): string {
  const sizeLimit = `the install exceeded the size limit of ${facts.maxLayerMegabytes} MB (sandbox.dependencies.maxLayerMegabytes); ask for fewer or smaller packages, or raise the limit`;
  const silent = facts.unreachable[0];
  if (facts.timedOut) return `the install timed out after ${facts.timeoutSeconds} s (sandbox.dependencies.timeoutSeconds)${silent === undefined ? '' : `; the registry ${facts.registryUrl} did not answer (${silent.reason})`}`;
  const relay = /the relay could not reach the runner's package proxy at \S+: (.+)/.exec(facts.output)?.[1];
  if (relay !== undefined) {
    return `the install sandbox could not reach the runner's package proxy (${relay.trim()}); under gVisor (sandbox.runtime: runsc) let runsc connect to the bound socket with --host-uds=open in its runtimeArgs (deploy/sandbox/README.md, "Dependencies")`;
  }
  if (facts.refusedHosts.length > 0) {
    const culprit = lastPackageMentioned(facts.ecosystem, facts.output);
    return `the install tried to reach ${facts.refusedHosts.join(', ')}, which ${facts.refusedHosts.length === 1 ? 'is' : 'are'} not a configured registry; the proxy refused, and a layer whose install reaches out is not used${culprit === undefined ? '' : ` (the last package being installed was ${culprit})`}. Use a package that installs without the network, or add the host to sandbox.dependencies.${facts.ecosystem}.extraHosts if it is a mirror of the registry`;
  }
  if (facts.tooLarge || /No space left on device|ENOSPC|\[Errno 28\]|Disk quota exceeded|File too large|EFBIG/.test(facts.output)) return sizeLimit;
  if (facts.oomKilled) return `the install ran out of memory (${facts.memoryMegabytes} MB: the size limit plus 512 MB for the installer); a package's build needs more than that`;
  if (silent !== undefined) {
    return `the registry ${facts.registryUrl} did not answer (${silent.host}: ${silent.reason}); check sandbox.dependencies.${facts.ecosystem === Ecosystem.PYTHON ? 'python.indexUrl' : 'npm.registry'}, or try again when it is up`;
  }
  const reason = facts.ecosystem === Ecosystem.PYTHON ? pipFailure(facts.output, facts.registryUrl) : npmFailure(facts.output, facts.registryUrl);
  if (reason !== undefined) return reason;
  const last = meaningfulLines(facts.output).slice(-3).join(' ');
  return `the ${facts.ecosystem === Ecosystem.PYTHON ? 'pip' : 'npm'} install exited with code ${facts.exitCode}${last === '' ? '' : `: ${last}`}`;
}

function pipFailure(output: string, registryUrl: string): string | undefined {
  const requirement = /No matching distribution found for ([^\s]+)/.exec(output)?.[1];
  if (requirement !== undefined) {
    const versions = new RegExp(`satisfies the requirement ${escapeRegExp(requirement)}[^\\n]*\\(from versions: ([^)]*)\\)`).exec(output)?.[1]?.trim();
    const name = /^[A-Za-z0-9._-]+/.exec(requirement)?.[0] ?? requirement;
    if (versions === undefined || versions === 'none') return `the package ${name} was not found on the index ${registryUrl} (pip: No matching distribution found for ${requirement}); check its name`;
    return `no version of ${name} matches ${requirement.slice(name.length).replace(/^\[[^\]]*\]/, '') || 'the requirement'} (pip: No matching distribution found for ${requirement}; the index has ${versions})`;
  }
  const conflict = /ERROR: (Cannot install [^\n]+conflicting dependencies\.)/.exec(output);
  if (conflict !== null) {
    const detail = /The conflict is caused by:\n([\s\S]*?)\n\n/.exec(output)?.[1]?.replace(/\s+/g, ' ').trim();
    return `pip could not resolve the dependencies: ${conflict[1]}${detail === undefined ? '' : ` ${detail}`}`;
  }
  if (/subprocess-exited-with-error/.test(output)) {
    const step = /× ([^\n]+) did not run successfully/.exec(output)?.[1] ?? 'building the package';
    const culprit = lastPackageMentioned(Ecosystem.PYTHON, output);
    const detail = meaningfulLines(/╰─>[^\n]*\n([\s\S]*?)(?:\n\s*\[end of output\]|\n\s*note:)/.exec(output)?.[1] ?? '').slice(-2).join(' ');
    return `${culprit === undefined ? 'a package' : culprit} could not be built from source (pip: ${step.toLowerCase()} failed${detail === '' ? '' : `: ${detail}`})`;
  }
  const error = /^ERROR: (.+)$/m.exec(output)?.[1];
  return error === undefined ? undefined : `pip failed: ${error}`;
}

function npmFailure(output: string, registryUrl: string): string | undefined {
  const code = /npm (?:error|ERR!) code (\S+)/.exec(output)?.[1];
  if (code === 'E404') {
    // npm 10 says "'x@*' is not in this registry", npm 11 "The requested resource 'x@latest' could not be found".
    const missing =
      /'((?:@[^/\s']+\/)?[^@\s']+)@[^']*' (?:is not in this registry|could not be found)/.exec(output)?.[1] ??
      /404 Not Found - GET \S*?\/((?:@[^/\s]+(?:\/|%2[fF]))?[^/\s]+?)(?:\s|$)/m.exec(output)?.[1]?.replace(/%2[fF]/, '/');
    return `the package ${missing ?? '(unnamed)'} was not found on the registry ${registryUrl} (npm E404); check its name`;
  }
  if (code === 'ETARGET') {
    const wanted = /No matching version found for ((?:@[^@\s]+\/)?[^@\s]+)@(\S+?)\.?$/m.exec(output);
    return wanted === null ? `npm found no version matching a requirement (ETARGET)` : `no version of ${wanted[1]} matches ${wanted[2]} (npm ETARGET)`;
  }
  if (code !== undefined && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|EHOSTUNREACH|ENETUNREACH)$/.test(code)) return `the registry ${registryUrl} did not answer (npm ${code}); check sandbox.dependencies.npm.registry, or try again when it is up`;
  if (code === 'ERESOLVE') return `npm could not resolve the dependencies (ERESOLVE): ${meaningfulLines(output).filter((line) => /Could not resolve|Conflicting|While resolving|Found/.test(line)).slice(0, 3).join(' ')}`;
  const script = /npm (?:error|ERR!) path \S*node_modules\/((?:@[^/\s]+\/)?[^/\s]+)\s*\n(?:.*\n)*?npm (?:error|ERR!) command (?:failed\s*\n(?:.*\n)*?npm (?:error|ERR!) command )?(.+)/.exec(output);
  if (script !== null) return `the install script of ${script[1]} failed (${(script[2] ?? '').trim()})`;
  if (code === 'E403') return `the registry ${registryUrl} refused a download (npm E403)`;
  const first = /npm (?:error|ERR!) (?!code )(.+)/.exec(output)?.[1];
  return code === undefined && first === undefined ? undefined : `npm failed (${code ?? 'error'})${first === undefined ? '' : `: ${first.trim()}`}`;
}

/** The last package pip or npm named before the failure, if any. */
function lastPackageMentioned(ecosystem: Ecosystem, output: string): string | undefined {
  if (ecosystem === Ecosystem.PYTHON) {
    const collected = [...output.matchAll(/^\s*(?:Collecting|Processing|Building wheel for|Running setup\.py install for) ([A-Za-z0-9._-]+)/gm)];
    return collected.at(-1)?.[1];
  }
  const paths = [...output.matchAll(/node_modules\/((?:@[^/\s]+\/)?[^/\s]+)/g)];
  return paths.at(-1)?.[1];
}

function meaningfulLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(/^\s*(?:npm (?:error|ERR!)|ERROR:|error:)\s*/, '').trim())
    .filter((line) => line !== '' && !/^(?:[│╰─>]+|note:|hint:|\[\d+ lines of output\]|\[end of output\])/.test(line));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
