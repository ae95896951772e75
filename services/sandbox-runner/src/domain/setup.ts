import { createHash } from 'node:crypto';
import type { DataFile, SandboxCommand, SourceFile } from '@ratchet/contracts';
import { caBundleFiles, installedDirectory, installSandboxEnvironment, type RegistrySettings } from './dependencies';

/**
 * A workspace's setup command (SandboxJob.setup_command): run once in an
 * install sandbox, its result cached as a layer, and every job and session
 * with the same setup started from that result.
 *
 * What the setup leaves that jobs need is of two kinds, and both live in the
 * work directory, so one copy serves jobs and sessions on either driver:
 * files it created or changed in the workspace (a generated `_version.py`,
 * `*.egg-info`), and packages it installed, which go to pip's user scheme
 * under `setupDirectory` (PYTHONUSERBASE), where Python's `site` finds them,
 * `.pth` files of editable installs included.
 */

/** Where, under the work directory, the setup's user installs live (in the install sandbox and in every job). */
export const setupDirectory = '.ratchet-setup';
/** The layer's subdirectory holding the files the setup created, by their workspace paths. */
export const setupOutputsDirectory = 'workspace';
/** Layout of a setup layer; a change makes every earlier one a miss. */
const setupLayout = 1;
/** Most files a setup may leave in the workspace (its installs included); more is a failed setup, saying so. */
export const maxSetupFiles = 20_000;

/**
 * Files whose content decides what a setup produces: the project's
 * manifests and lockfiles, at any depth (a monorepo's packages have their
 * own). A change to one builds the layer again; a change to other sources
 * does not.
 */
const lockfileNames = new Set([
  'pyproject.toml',
  'setup.py',
  'setup.cfg',
  'requirements.txt',
  'poetry.lock',
  'uv.lock',
  'Pipfile.lock',
  'pdm.lock',
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'MANIFEST.in',
]);

/** Whether `path` is a manifest or lockfile the setup layer is keyed by. */
export function isLockfile(path: string): boolean {
  const name = path.slice(path.lastIndexOf('/') + 1);
  // requirements.txt, requirements-dev.txt, and the files of a requirements/ directory.
  return lockfileNames.has(name) || /^requirements[\w.-]*\.(txt|in)$/.test(name) || /(^|\/)requirements\/[^/]+\.(txt|in)$/.test(path);
}

/**
 * The key of a setup layer: sha256 over the layout, the command, each
 * lockfile's path and content hash, the registries the install proxy lets
 * through, and the image, hex.
 */
export function setupKey(input: { readonly command: string; readonly files: readonly (SourceFile | DataFile)[]; readonly registries: readonly RegistrySettings[]; readonly image: string }): string {
  const lockfiles = input.files
    .filter((file) => isLockfile(file.path))
    .map((file) => [file.path, createHash('sha256').update(file.content).digest('hex')])
    .sort(([left], [right]) => ((left as string) < (right as string) ? -1 : 1));
  const canonical = JSON.stringify({
    layout: setupLayout,
    kind: 'setup',
    command: input.command,
    lockfiles,
    registries: input.registries.map((registry) => ({ url: registry.url, hosts: [...registry.hosts].sort() })),
    image: input.image,
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/** The marker whose mtime separates the files the runner wrote from those the setup made. */
const startMarker = '.tmp/setup-started';

/**
 * What the install sandbox runs for a setup: the command in `sh -c` from the
 * workspace root, with the registries reachable through the relayed proxy
 * (pip and npm pointed at them), then a copy of every regular file created
 * or changed since the command began into `layer/workspace/`, the part the
 * runner exports. Caches and the sandbox's own directories are left out.
 */
export function setupPlan(
  command: string,
  registries: { readonly python: RegistrySettings; readonly npm: RegistrySettings },
  options: { readonly timeoutSeconds: number; readonly caBundle?: string },
): { files: SourceFile[]; commands: SandboxCommand[]; env: Record<string, string> } {
  const pythonIndex = new URL(registries.python.url);
  const out = `${installedDirectory}/${setupOutputsDirectory}`;
  const skip = ['./.tmp', `./${installedDirectory}`, './.git', './.npm-cache']
    .map((prefix) => `-path ${prefix}`)
    .concat(['-name __pycache__', '-name .pytest_cache', '-name .mypy_cache', '-name .ruff_cache'])
    .join(' -o ');
  // `cp --parents` keeps each file's path under the output directory; `-newer` takes only what the setup wrote.
  const collect = `find . \\( ${skip} \\) -prune -o -type f -newer ${startMarker} -exec cp -p --parents {} ${out}/ \\;`;
  return {
    commands: [
      { name: 'prepare', argv: ['sh', '-c', `mkdir -p .tmp/home ${out} ${setupDirectory} && touch ${startMarker} && sleep 0.01`], workingDirectory: '', timeout: undefined },
      { name: 'setup', argv: ['sh', '-c', command], workingDirectory: '', timeout: { seconds: options.timeoutSeconds, nanos: 0 } },
      { name: 'collect', argv: ['sh', '-c', collect], workingDirectory: '', timeout: undefined },
    ],
    files: caBundleFiles(options.caBundle),
    env: {
      ...installSandboxEnvironment(options.caBundle),
      ...setupEnvironment({}),
      HOME: '/work/.tmp/home',
      // pip: the configured index only, installs to the user scheme (Debian's pip refuses that without the override).
      PIP_INDEX_URL: registries.python.url,
      ...(pythonIndex.protocol === 'http:' ? { PIP_TRUSTED_HOST: pythonIndex.hostname } : {}),
      PIP_USER: '1',
      PIP_BREAK_SYSTEM_PACKAGES: '1',
      PIP_NO_CACHE_DIR: '1',
      PIP_DISABLE_PIP_VERSION_CHECK: '1',
      PIP_NO_INPUT: '1',
      PIP_PROGRESS_BAR: 'off',
      PIP_ROOT_USER_ACTION: 'ignore',
      npm_config_registry: registries.npm.url,
      npm_config_cache: '/work/.npm-cache',
      npm_config_update_notifier: 'false',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
    },
  };
}

/** A job's environment with the setup's user installs in it (a value the job sets itself wins). */
export function setupEnvironment(env: Readonly<Record<string, string>>): Record<string, string> {
  const base = `/work/${setupDirectory}`;
  const path = env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin';
  return { PYTHONUSERBASE: base, ...env, PATH: `${base}/bin:${path}` };
}

/** `outputs` without the paths `own` already has: the workspace's (or the attempt's) files win over the setup's copies. */
export function outputsBeside<T extends { readonly path: string }>(outputs: readonly DataFile[], own: readonly T[]): DataFile[] {
  const taken = new Set(own.map((file) => file.path));
  return outputs.filter((file) => !taken.has(file.path));
}

/** Why a setup failed, one paragraph: the command, how it ended, the hosts it was refused, and what to do. */
export function setupFailure(input: {
  readonly command: string;
  readonly exitCode: number;
  readonly timedOut: boolean;
  readonly oomKilled: boolean;
  readonly failedStep: string;
  readonly refusedHosts: readonly string[];
  readonly timeoutSeconds: number;
  readonly tooLarge: boolean;
  readonly maxLayerMegabytes: number;
}): string {
  const command = JSON.stringify(input.command.length > 200 ? `${input.command.slice(0, 200)}...` : input.command);
  const refused = input.refusedHosts.length === 0 ? '' : ` It tried to reach ${input.refusedHosts.join(', ')}, which the sandbox refuses: only the configured registries are reachable (sandbox.dependencies).`;
  if (input.tooLarge) return `the setup command ${command} left more than ${input.maxLayerMegabytes} MB or ${maxSetupFiles} files in the workspace; raise sandbox.dependencies.maxLayerMegabytes or make the setup install less.${refused}`;
  if (input.timedOut) return `the setup command ${command} did not finish in ${input.timeoutSeconds} s; make it faster or raise sandbox.dependencies.timeoutSeconds.${refused}`;
  if (input.oomKilled) return `the setup command ${command} ran out of memory.${refused}`;
  if (input.failedStep !== 'setup') return `the runner could not collect what the setup command ${command} made (its ${input.failedStep} step exited with code ${input.exitCode}).`;
  return `the setup command ${command} exited with code ${input.exitCode}; fix the command (in --setup-command or .ratchet.yaml) or the project so it runs in a clean sandbox.${refused}`;
}
