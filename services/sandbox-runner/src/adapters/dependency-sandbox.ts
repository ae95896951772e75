import { closeSync, openSync, writeSync } from 'node:fs';
import { lstat, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { durationFromMs } from '@ratchet/agent';
import { Language, SandboxDriver, type DataFile, type DependencyInstall, type SandboxJob, type SandboxJobResult, type SandboxLimits } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import {
  Ecosystem,
  ecosystemOf,
  installedDirectory,
  installFailure,
  installPlan,
  layerEnvironment,
  layerKey,
  layerLayout,
  layerMountPoint,
  proxyMountPoint,
  proxySocketName,
  registryOf,
  relayPort,
  requirementLines,
  resolvedFromDistInfo,
  resolvedFromPackageLock,
  resolveHookName,
  resolveHookSource,
  type LayerManifest,
  type RegistrySettings,
} from '../domain/dependencies';
import { effectiveLimits, maximumLimits, validateJob, type EffectiveLimits } from '../domain/job-limits';
import { maxSetupFiles, outputsBeside, setupDirectory, setupEnvironment, setupFailure, setupKey, setupOutputsDirectory, setupPlan } from '../domain/setup';
import { bytesOf } from '../domain/work-files';
import { parseJUnit } from '../domain/junit';
import { stripControlSequences } from '../domain/terminal-text';
import { extractLayer, LayerTooLarge } from './layer-archive';
import { LayerCache } from './layer-cache';
import { RegistryProxy } from './registry-proxy';
import type { SessionLaunch, SessionSandbox } from './session-sandbox';
import type { SandboxRunOptions } from './supervised-job';

/** The `sandbox.dependencies` settings, with the cache directory decided. */
export interface DependencyOptions {
  readonly cacheDirectory: string;
  readonly caFile?: string;
  readonly timeoutSeconds: number;
  readonly maxLayerMegabytes: number;
  readonly python: { readonly indexUrl: string; readonly extraHosts: readonly string[] };
  readonly npm: { readonly registry: string; readonly extraHosts: readonly string[] };
}

/** What DependencySandbox needs of a driver: DockerDriver and BubblewrapDriver both are one. */
export interface LayeredDriver {
  readonly runnerId: string;
  readonly warmPoolSize: number;
  run(job: SandboxJob, signal?: AbortSignal, options?: SandboxRunOptions): Promise<SandboxJobResult>;
  /** What identifies the job's image or root filesystem, for the layer key. */
  imageIdentity(image?: string): Promise<string>;
  openSession(launch: SessionLaunch): Promise<SessionSandbox>;
  ping(): Promise<string>;
  warm(): Promise<void>;
  close(): Promise<void>;
}

/** Told what the dependency step changed on the host; a pino logger is one. */
export interface DependencyLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** A layer ready to mount, or why there is none. */
interface LayerOutcome {
  readonly directory?: string;
  readonly install: DependencyInstall;
}

/** A setup's files, ready to copy into a job, or why there are none. */
interface SetupOutcome {
  readonly outputs?: DataFile[];
  readonly install: DependencyInstall;
}

/** Setup layers whose files a runner keeps in memory. */
const keptSetups = 4;

/** How much of the installer's output `install.log` keeps: its end. */
const logTailBytes = 8 * 1024;
/** Memory the installer gets on top of the size limit (tmpfs pages count as the sandbox's memory). */
const installerMemoryBytes = 512 << 20;

/**
 * A driver that also installs jobs' dependencies (SandboxJob.dependencies).
 * A job without any runs on the driver as before. For one with some, the
 * runner first makes sure the layer exists: keyed by the hash of the
 * ecosystem, the requirements, the registry and the image, kept in the
 * cache directory, built when missing by an install job of its own (same
 * driver, same hardening, never pooled, no network; its only way out is a
 * RegistryProxy on a Unix socket bound into the sandbox, which the
 * supervisor relays to 127.0.0.1:3128, and which reaches the configured
 * registries only). The installer writes into the sandbox's size-capped
 * work directory; the supervisor streams the result back as a tar, and the
 * runner writes it into a staging copy it owns, then renames it into the
 * cache. The job then runs, never pooled, with the layer bound read-only at
 * /deps and the environment that finds it; its sandbox has no network
 * either. A failed install ends the job before any command, with the reason
 * in `install.error`.
 */
export class DependencySandbox {
  readonly cache: LayerCache;
  private readonly building = new Map<string, Promise<LayerOutcome>>();
  /** Setup layers being built in this process, by key: jobs that need one at the same time wait for the same build. */
  private readonly buildingSetups = new Map<string, Promise<SetupOutcome>>();
  /** The files of the setup layers used last, by key. */
  private readonly setupOutputs = new Map<string, DataFile[]>();
  private readonly closing = new AbortController();

  constructor(
    private readonly driver: LayeredDriver,
    private readonly options: DependencyOptions,
    private readonly context: { readonly driverKind: SandboxDriver; readonly defaults?: EffectiveLimits; readonly logger?: DependencyLogger },
  ) {
    this.cache = new LayerCache(options.cacheDirectory);
  }

  get runnerId(): string {
    return this.driver.runnerId;
  }

  get warmPoolSize(): number {
    return this.driver.warmPoolSize;
  }

  openSession(launch: SessionLaunch): Promise<SessionSandbox> {
    return this.driver.openSession(launch);
  }

  /** The driver's check (the layer cache has its own: `cache.check()`). */
  ping(): Promise<string> {
    return this.driver.ping();
  }

  /** Warms the driver. The layer cache is made and repaired at the first install, so a runner that never installs leaves no trace of it. */
  warm(): Promise<void> {
    return this.driver.warm();
  }

  /** Stops installs under way, then closes the driver. */
  async close(): Promise<void> {
    this.closing.abort();
    await Promise.allSettled([...this.building.values(), ...this.buildingSetups.values()]);
    await this.driver.close();
  }

  /**
   * Runs `job`, its dependencies installed first (or taken from the cache).
   * See DockerDriver.run for what is a result and what throws; an install
   * that fails is a result (`install.error`, no command run), an install the
   * driver cannot start throws as a job would.
   */
  async run(job: SandboxJob, signal?: AbortSignal): Promise<SandboxJobResult> {
    if (job.setupCommand === '') return this.runWithDependencies(job, signal);
    const startedAt = new Date();
    validateJob(job, effectiveLimits(job.limits, this.context.defaults));
    const prepared = await this.setup(job, signal);
    if (prepared.outputs === undefined) return { ...this.notRun(job, startedAt, prepared.setup, 'its setup command failed'), install: undefined, setup: prepared.setup };
    const result = await this.runWithDependencies({ ...job, setupCommand: '', dataFiles: [...job.dataFiles, ...outputsBeside(prepared.outputs, [...job.files, ...job.dataFiles])], env: setupEnvironment(job.env) }, signal);
    return { ...result, setup: prepared.setup };
  }

  /**
   * What a job or session with `request.setupCommand` starts from: the files
   * the setup made (from the cache, or built now in an install sandbox), or,
   * when it failed, why (`setup.error`, no outputs).
   */
  async setup(request: Pick<SandboxJob, 'jobId' | 'taskId' | 'iteration' | 'language' | 'files' | 'dataFiles' | 'image' | 'setupCommand'>, signal?: AbortSignal): Promise<{ setup: DependencyInstall; outputs?: DataFile[] }> {
    const registries = { python: registryOf(Ecosystem.PYTHON, this.options), npm: registryOf(Ecosystem.NPM, this.options) };
    const image = await this.driver.imageIdentity(request.image);
    const key = setupKey({ command: request.setupCommand, files: [...request.files, ...request.dataFiles], registries: [registries.python, registries.npm], image });
    let pending = this.buildingSetups.get(key);
    if (pending === undefined) {
      pending = this.ensureSetup(key, request, registries, image).finally(() => this.buildingSetups.delete(key));
      this.buildingSetups.set(key, pending);
    }
    const outcome = await untilAborted(pending, signal, request.jobId);
    return outcome.outputs === undefined ? { setup: outcome.install } : { setup: outcome.install, outputs: outcome.outputs };
  }

  private async ensureSetup(key: string, request: Pick<SandboxJob, 'taskId' | 'iteration' | 'language' | 'files' | 'dataFiles' | 'image' | 'setupCommand'>, registries: { python: RegistrySettings; npm: RegistrySettings }, image: string): Promise<SetupOutcome> {
    await this.prepareCache();
    const cached = await this.cache.read(key);
    if (cached !== undefined) {
      const outputs = await this.outputsOf(key);
      if (outputs !== undefined) return { install: installOf(cached, true, 0, ''), outputs };
    }
    return this.buildSetup(key, request, registries, image);
  }

  /** The files of setup layer `key`, read once per runner process (the few most recent kept). */
  private async outputsOf(key: string): Promise<DataFile[] | undefined> {
    const kept = this.setupOutputs.get(key);
    if (kept !== undefined) return kept;
    const outputs = await readTree(path.join(this.cache.layerDirectory(key), setupOutputsDirectory)).catch(() => undefined);
    if (outputs === undefined) return undefined;
    this.setupOutputs.set(key, outputs);
    for (const old of [...this.setupOutputs.keys()].slice(0, Math.max(0, this.setupOutputs.size - keptSetups))) this.setupOutputs.delete(old);
    return outputs;
  }

  /** Runs the setup command in an install sandbox and commits what it made to the cache as layer `key`. */
  private async buildSetup(key: string, request: Pick<SandboxJob, 'taskId' | 'iteration' | 'language' | 'files' | 'dataFiles' | 'image' | 'setupCommand'>, registries: { python: RegistrySettings; npm: RegistrySettings }, image: string): Promise<SetupOutcome> {
    const started = performance.now();
    const layerBytes = this.options.maxLayerMegabytes * 1024 * 1024;
    const caBundle = await this.caBundle();
    const plan = setupPlan(request.setupCommand, registries, { timeoutSeconds: this.options.timeoutSeconds, ...(caBundle === undefined ? {} : { caBundle }) });
    const workspaceBytes = [...request.files, ...request.dataFiles].reduce((sum, file) => sum + bytesOf(file).length, 0);
    const limits: SandboxLimits = {
      memoryBytes: Math.min(maximumLimits.memoryBytes, layerBytes * 2 + workspaceBytes + installerMemoryBytes),
      pids: 256,
      cpus: Math.min(maximumLimits.cpus, Math.max(1, this.context.defaults?.cpus ?? 1)),
      timeout: { seconds: this.options.timeoutSeconds + 60, nanos: 0 },
      outputLimitBytes: 1 << 20,
      // The workspace, what the setup makes, and its copy in the exported directory.
      workDirBytes: Math.min(maximumLimits.workDirBytes, workspaceBytes + layerBytes * 2),
    };
    const setupJob = installSandboxJob(`setup-${key.slice(0, 16)}`, request, { files: [...request.files, ...plan.files], dataFiles: [...request.dataFiles], commands: plan.commands, env: plan.env, limits });
    const { result, archive, archived, overflow, writeError, refusedHosts } = await this.runExporting(setupJob, [...new Set([...registries.python.hosts, ...registries.npm.hosts])], layerBytes);
    const log = tail(stripControlSequences(Buffer.concat([result.stdout, result.stderr])).toString('utf8'), logTailBytes);
    const failed = result.commandResults.find((command) => command.exitCode !== 0);
    const failure = (tooLarge: boolean) =>
      setupFailure({
        command: request.setupCommand,
        exitCode: failed?.exitCode ?? result.exitCode,
        timedOut: result.timedOut,
        oomKilled: result.oomKilled,
        failedStep: failed?.name ?? 'setup',
        refusedHosts,
        timeoutSeconds: this.options.timeoutSeconds,
        tooLarge,
        maxLayerMegabytes: this.options.maxLayerMegabytes,
      });
    const elapsed = () => durationFromMs(performance.now() - started);
    // A setup that reached for another host is not used even when it went on without it.
    if (result.exitCode !== 0 || result.timedOut || result.oomKilled || refusedHosts.length > 0 || overflow || writeError !== undefined) {
      await rm(archive, { force: true });
      return { install: { ...failedInstall(key, failure(overflow)), duration: elapsed(), log, refusedHosts } };
    }
    const staged = await this.cache.stage(key);
    try {
      if (archived > 0) await extractLayer(archive, staged, installedDirectory, layerBytes);
      const outputs = await readTree(path.join(staged, setupOutputsDirectory));
      if (outputs.length > maxSetupFiles) throw new LayerTooLarge();
      const manifest: LayerManifest = {
        layout: layerLayout,
        key,
        ecosystem: ecosystemOf(request.language) ?? Ecosystem.PYTHON,
        requirements: [request.setupCommand],
        resolved: outputs.map((file) => file.path).filter((file) => !file.startsWith(`${setupDirectory}/`)),
        sizeBytes: outputs.reduce((sum, file) => sum + file.content.length, 0),
        image,
        registry: registries.python.url,
        createdAt: new Date().toISOString(),
      };
      const committed = await this.cache.commit(staged, manifest);
      this.setupOutputs.set(key, outputs);
      return { install: installOf(committed, false, performance.now() - started, log), outputs };
    } catch (error) {
      await rm(staged, { recursive: true, force: true });
      const reason = error instanceof LayerTooLarge ? failure(true) : `the files the setup made could not be read back into the layer cache: ${(error as Error).message}`;
      return { install: { ...failedInstall(key, reason), duration: elapsed(), log } };
    } finally {
      await rm(archive, { force: true });
    }
  }

  /** `run` for a job whose setup, if any, is done: its dependencies installed first (or taken from the cache). */
  private async runWithDependencies(job: SandboxJob, signal?: AbortSignal): Promise<SandboxJobResult> {
    if (job.dependencies.length === 0) return this.driver.run(job, signal);
    const startedAt = new Date();
    validateJob(job, effectiveLimits(job.limits, this.context.defaults));
    const ecosystem = ecosystemOf(job.language);
    if (ecosystem === undefined) return this.notRun(job, startedAt, failedInstall('', `dependencies are installed for Python, JavaScript and TypeScript jobs; this job's language (${Language[job.language] ?? job.language}) has none`));
    const parsed = requirementLines(ecosystem, job.dependencies);
    if ('problem' in parsed) return this.notRun(job, startedAt, failedInstall('', parsed.problem));
    const registry = registryOf(ecosystem, this.options);
    const image = await this.driver.imageIdentity(job.image);
    const key = layerKey({ ecosystem, lines: parsed.lines, registry, image });
    const layer = await untilAborted(this.layer(key, job, ecosystem, parsed.lines, registry, image), signal, job.jobId);
    if (layer.directory === undefined) return this.notRun(job, startedAt, layer.install);
    const result = await this.driver.run({ ...job, env: layerEnvironment(ecosystem, job.env) }, signal, { mounts: [{ source: layer.directory, target: layerMountPoint }] });
    return { ...result, install: layer.install };
  }

  private async prepareCache(): Promise<void> {
    const repaired = await this.cache.prepare();
    if (repaired.length > 0) this.context.logger?.warn({ directory: this.cache.directory, repaired }, `repaired the dependency layer cache: ${repaired.join('; ')}`);
  }

  /** The layer of `key`: from the cache, from a build under way in this process, or built now. */
  private layer(key: string, job: SandboxJob, ecosystem: Ecosystem, lines: readonly string[], registry: RegistrySettings, image: string): Promise<LayerOutcome> {
    let pending = this.building.get(key);
    if (pending === undefined) {
      pending = this.ensure(key, job, ecosystem, lines, registry, image).finally(() => this.building.delete(key));
      this.building.set(key, pending);
    }
    return pending;
  }

  private async ensure(key: string, job: SandboxJob, ecosystem: Ecosystem, lines: readonly string[], registry: RegistrySettings, image: string): Promise<LayerOutcome> {
    await this.prepareCache();
    const cached = await this.cache.read(key);
    if (cached !== undefined) return { directory: this.cache.layerDirectory(key), install: installOf(cached, true, 0, '') };
    return this.install(key, job, ecosystem, lines, registry, image);
  }

  /** Builds layer `key` in an install sandbox and commits it to the cache. */
  private async install(key: string, job: SandboxJob, ecosystem: Ecosystem, lines: readonly string[], registry: RegistrySettings, image: string): Promise<LayerOutcome> {
    const started = performance.now();
    const layerBytes = this.options.maxLayerMegabytes * 1024 * 1024;
    const caBundle = await this.caBundle();
    const plan = installPlan(ecosystem, lines, registry, { timeoutSeconds: this.options.timeoutSeconds, ...(caBundle === undefined ? {} : { caBundle }) });
    const limits: SandboxLimits = {
      memoryBytes: Math.min(maximumLimits.memoryBytes, layerBytes + installerMemoryBytes),
      pids: 256,
      cpus: Math.min(maximumLimits.cpus, Math.max(1, this.context.defaults?.cpus ?? 1)),
      timeout: { seconds: this.options.timeoutSeconds, nanos: 0 },
      outputLimitBytes: 1 << 20,
      workDirBytes: layerBytes,
    };
    const installJob = installSandboxJob(`deps-${key.slice(0, 16)}`, job, { files: plan.files, dataFiles: [], commands: plan.commands, env: plan.env, limits });
    const { result, archive, archived, overflow, writeError, refusedHosts, unreachable } = await this.runExporting(installJob, registry.hosts, layerBytes);
    const output = stripControlSequences(Buffer.concat([result.stdout, result.stderr])).toString('utf8');
    const log = tail(output, logTailBytes);
    const exitCode = result.commandResults.at(-1)?.exitCode ?? result.exitCode;
    const failure = (tooLarge: boolean) =>
      installFailure({
        ecosystem,
        registryUrl: registry.url,
        exitCode,
        timedOut: result.timedOut,
        oomKilled: result.oomKilled,
        output,
        refusedHosts,
        unreachable,
        tooLarge,
        timeoutSeconds: this.options.timeoutSeconds,
        maxLayerMegabytes: this.options.maxLayerMegabytes,
        memoryMegabytes: Math.round((limits.memoryBytes ?? 0) / (1 << 20)),
      });
    const elapsed = () => performance.now() - started;
    // A layer whose install reached for another host is not used even when the installer went on without it.
    if (result.exitCode !== 0 || result.timedOut || refusedHosts.length > 0 || overflow || writeError !== undefined) {
      await rm(archive, { force: true });
      const reason =
        writeError !== undefined && result.exitCode === 0 && refusedHosts.length === 0
          ? `the runner could not store the installed files in ${this.cache.directory} (${writeError.code ?? writeError.message}); free space there or move sandbox.dependencies.cacheDirectory`
          : failure(overflow);
      return { install: { ...failedInstall(key, reason), duration: durationFromMs(elapsed()), log, refusedHosts } };
    }
    const staged = await this.cache.stage(key);
    try {
      if (archived === 0) throw new Error('the install sandbox sent no files back');
      await extractLayer(archive, staged, installedDirectory, layerBytes);
      if (ecosystem === Ecosystem.NPM) await writeFile(path.join(staged, resolveHookName), resolveHookSource, { mode: 0o644, flag: 'wx' });
      const manifest: LayerManifest = {
        layout: layerLayout,
        key,
        ecosystem,
        requirements: lines,
        resolved: await resolvedIn(staged, ecosystem),
        sizeBytes: await sizeOf(staged),
        image,
        registry: registry.url,
        createdAt: new Date().toISOString(),
      };
      const committed = await this.cache.commit(staged, manifest);
      return { directory: this.cache.layerDirectory(key), install: { ...installOf(committed, false, elapsed(), log) } };
    } catch (error) {
      await rm(staged, { recursive: true, force: true });
      const reason = error instanceof LayerTooLarge ? failure(true) : `the installed files could not be read back into the layer cache: ${(error as Error).message}`;
      return { install: { ...failedInstall(key, reason), duration: durationFromMs(elapsed()), log } };
    } finally {
      await rm(archive, { force: true });
    }
  }

  /**
   * Runs `installJob` in its own sandbox whose only way out is a
   * RegistryProxy to `hosts`, streaming the exported layer directory into a
   * temporary tar of the cache's (the caller removes `archive`), up to a cap
   * that leaves room for tar's headers.
   */
  private async runExporting(installJob: SandboxJob, hosts: readonly string[], layerBytes: number) {
    const archive = this.cache.temporaryFile('.tar');
    const maxArchiveBytes = layerBytes * 2 + (16 << 20);
    let archived = 0;
    let overflow = false;
    const proxyDirectory = await this.cache.proxyDirectory();
    const socketPath = path.join(proxyDirectory, proxySocketName);
    const proxy = await RegistryProxy.start(socketPath, hosts).catch(async (error: unknown) => {
      await rm(proxyDirectory, { recursive: true, force: true });
      // sun_path holds 108 bytes with its NUL.
      if (Buffer.byteLength(socketPath) > 107) throw new AppError(ErrorCode.FAILED_PRECONDITION, `the install proxy's socket ${socketPath} is longer than a Unix socket path may be (107 bytes); choose a shorter sandbox.dependencies.cacheDirectory`, { cause: error });
      throw error;
    });
    let descriptor: number | undefined;
    let writeError: NodeJS.ErrnoException | undefined;
    let result: SandboxJobResult;
    try {
      descriptor = openSync(archive, 'wx', 0o600);
      const file = descriptor;
      result = await this.driver.run(installJob, this.closing.signal, {
        mounts: [{ source: proxyDirectory, target: proxyMountPoint }],
        relay: { port: relayPort, socket: `${proxyMountPoint}/${proxySocketName}` },
        exportDirectory: installedDirectory,
        onExport: (chunk) => {
          if (overflow || writeError !== undefined) return;
          if (archived + chunk.length > maxArchiveBytes) {
            overflow = true;
            return;
          }
          try {
            writeSync(file, chunk);
            archived += chunk.length;
          } catch (error) {
            writeError = error as NodeJS.ErrnoException;
          }
        },
      });
    } catch (error) {
      await rm(archive, { force: true });
      throw error;
    } finally {
      if (descriptor !== undefined) closeSync(descriptor);
      await proxy.close();
      await rm(proxyDirectory, { recursive: true, force: true }).catch(() => undefined);
    }
    const refusedHosts = [...proxy.refused];
    const unreachable = [...proxy.unreachable].map(([host, reason]) => ({ host, reason }));
    return { result, archive, archived, overflow, writeError: writeError as NodeJS.ErrnoException | undefined, refusedHosts, unreachable };
  }

  /** The configured CA bundle's text, or undefined. */
  private async caBundle(): Promise<string | undefined> {
    if (this.options.caFile === undefined) return undefined;
    return readFile(this.options.caFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `sandbox.dependencies.caFile ${this.options.caFile} cannot be read (${error.code ?? error.message}); point it at a PEM bundle or unset it`, { cause: error });
    });
  }

  /** The result of a job whose dependencies could not be installed: no command ran, no report, the reason in `install.error` and stderr. */
  private notRun(job: SandboxJob, startedAt: Date, install: DependencyInstall, why = 'its dependencies could not be installed'): SandboxJobResult {
    const framework = job.language === Language.LANGUAGE_PYTHON ? 'pytest' : 'node:test';
    return {
      jobId: job.jobId,
      taskId: job.taskId,
      exitCode: -1,
      stdout: Buffer.alloc(0),
      stderr: Buffer.from(`ratchet: none of the job's commands ran because ${why}: ${install.error}\n`),
      stdoutTruncated: false,
      stderrTruncated: false,
      timedOut: false,
      oomKilled: false,
      resourceUsage: undefined,
      testReport: { ...parseJUnit(undefined, framework), parseError: `no tests ran: ${why} (${install.error})` },
      commandResults: [],
      driver: this.context.driverKind,
      runnerId: this.driver.runnerId,
      startedAt,
      completedAt: new Date(),
      error: undefined,
      tamperedPaths: [],
      rejectedOutputs: [],
      startup: undefined,
      install,
    };
  }
}

/** A job of an install sandbox (a dependency install or a setup) for `owner`'s task: never pooled, no report, nothing protected. */
function installSandboxJob(
  name: string,
  owner: Pick<SandboxJob, 'taskId' | 'iteration' | 'language' | 'image'>,
  work: Pick<SandboxJob, 'files' | 'dataFiles' | 'commands' | 'env' | 'limits'>,
): SandboxJob {
  return {
    jobId: `${name}-${randomUUID().slice(0, 8)}`,
    taskId: owner.taskId,
    iteration: owner.iteration,
    language: owner.language,
    ...work,
    driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
    image: owner.image,
    testReportPath: '',
    protectedPaths: [],
    dependencies: [],
    setupCommand: '',
    enqueuedAt: undefined,
    deadline: undefined,
  };
}

function failedInstall(key: string, error: string): DependencyInstall {
  return { layerKey: key, cached: false, duration: undefined, resolved: [], error, log: '', refusedHosts: [], sizeBytes: 0 };
}

function installOf(manifest: LayerManifest, cached: boolean, ms: number, log: string): DependencyInstall {
  return { layerKey: manifest.key, cached, duration: durationFromMs(ms), resolved: [...manifest.resolved], error: '', log, refusedHosts: [], sizeBytes: manifest.sizeBytes };
}

/** `promise`, or AppError CANCELLED as soon as `signal` aborts (the work behind `promise` goes on for other jobs). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined, jobId: string): Promise<T> {
  if (signal === undefined) return promise;
  const cancelled = () => new AppError(ErrorCode.CANCELLED, `sandbox job ${jobId} was cancelled while its dependencies were installed`);
  if (signal.aborted) return Promise.reject(cancelled());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** What the layer holds, "name==version": pip's dist-info directories, or npm's package-lock.json. Links are never followed. */
async function resolvedIn(layer: string, ecosystem: Ecosystem): Promise<string[]> {
  if (ecosystem === Ecosystem.NPM) {
    const lock = path.join(layer, 'npm', 'package-lock.json');
    return (await lstat(lock).catch(() => undefined))?.isFile() === true ? resolvedFromPackageLock(await readFile(lock, 'utf8')) : [];
  }
  const site = path.join(layer, 'python');
  const entries = await readdir(site, { withFileTypes: true }).catch(() => []);
  const found: { directory: string; metadata?: string }[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || !entry.name.endsWith('.dist-info')) continue;
    const metadata = path.join(site, entry.name, 'METADATA');
    const readable = (await lstat(metadata).catch(() => undefined))?.isFile() === true;
    found.push({ directory: entry.name, ...(readable ? { metadata: await readFile(metadata, 'utf8') } : {}) });
  }
  return resolvedFromDistInfo(found);
}

/** The regular files under `directory` as data files, by their paths below it (links and others left out); none when it does not exist. */
async function readTree(directory: string): Promise<DataFile[]> {
  if ((await lstat(directory).catch(() => undefined))?.isDirectory() !== true) return [];
  const files: DataFile[] = [];
  const pending = [''];
  while (pending.length > 0) {
    const relative = pending.pop() as string;
    for (const entry of await readdir(path.join(directory, relative), { withFileTypes: true })) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) pending.push(child);
      else if (entry.isFile()) files.push({ path: child, content: await readFile(path.join(directory, child)) });
    }
  }
  return files.sort((left, right) => (left.path < right.path ? -1 : 1));
}

/** Bytes of the regular files under `directory`, links not followed. */
async function sizeOf(directory: string): Promise<number> {
  let total = 0;
  const pending = [directory];
  while (pending.length > 0) {
    const current = pending.pop() as string;
    for (const entry of await readdir(current, { withFileTypes: true })) {
      const child = path.join(current, entry.name);
      if (entry.isDirectory()) pending.push(child);
      else if (entry.isFile()) total += (await lstat(child)).size;
    }
  }
  return total;
}

/** The last `bytes` of `text`, from a line start when one is near. */
function tail(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  const end = Buffer.from(text).subarray(-bytes).toString('utf8');
  const newline = end.indexOf('\n');
  return newline >= 0 && newline < 200 ? end.slice(newline + 1) : end;
}
