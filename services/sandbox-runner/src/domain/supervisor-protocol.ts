import type { SandboxJob } from '@ratchet/contracts';
import { bytesOf, type WorkFile } from './work-files';
import tar from 'tar-stream';
import { msOf } from '@ratchet/agent';
import type { EffectiveLimits } from './job-limits';

/**
 * The runner's side of the supervisor protocol (supervisor/supervisor.py):
 * what goes to the supervisor's stdin, and the frames that come back.
 */

export const FrameType = { STDOUT: 1, STDERR: 2, EVENT: 3, TAR: 4, DONE: 5, EXPORT: 6 } as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

export interface Frame {
  readonly type: FrameType;
  readonly payload: Buffer;
}

/** Where the job's files go inside the sandbox. */
export const workDirectory = '/work';

/**
 * Test configuration files sent back after every run wherever they are in
 * the work directory, so one the code under test creates is seen.
 */
export const testConfigNames = ['conftest.py', 'pytest.ini', 'tox.ini', 'setup.cfg', 'pyproject.toml', 'sitecustomize.py', 'usercustomize.py', 'package.json'];

/** Archive name of the JUnit report in the supervisor's output tar. */
export const reportEntryName = '.ratchet-report/junit.xml';

/** Largest output archive accepted, bytes; the supervisor caps what it sends at the same size. */
export const maxCollectBytes = 8 * 1024 * 1024;
export const maxCollectFiles = 2_000;

export interface SpecOptions {
  /** Resource limits the supervisor applies to each command with setrlimit, beyond the always-set ones. */
  readonly extraRlimits?: { readonly nproc?: number; readonly as?: number };
  /** The supervisor relays TCP to 127.0.0.1:port to this Unix socket (a path inside the sandbox). */
  readonly relay?: { readonly port: number; readonly socket: string };
  /** After every command succeeded, the supervisor streams the files under this directory (relative to the work directory) back as EXPORT frames. */
  readonly exportDirectory?: string;
}

/**
 * The commands' environment: a fixed base (never the runner's), worker
 * counts for the job's CPU quota (inside a limited sandbox the CPU count
 * still shows the host's), then the job's own variables.
 */
export function commandEnvironment(env: Readonly<Record<string, string>>, limits: EffectiveLimits): Record<string, string> {
  const workers = String(Math.max(1, Math.floor(limits.cpus)));
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: '/tmp',
    LANG: 'C.UTF-8',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
    RATCHET_CPUS: workers,
    OMP_NUM_THREADS: workers,
    OPENBLAS_NUM_THREADS: workers,
    MKL_NUM_THREADS: workers,
    NUMEXPR_NUM_THREADS: workers,
    ...env,
  };
}

/**
 * The supervisor's stdin for `job`: the spec (JSON) and the files, each
 * preceded by its length (u32, big-endian).
 */
export function jobInput(job: SandboxJob, limits: EffectiveLimits, options: SpecOptions = {}): Buffer {
  // Read back only what the result needs: the report, and, to check them,
  // the protected files and any test configuration file the walk finds.
  const collect: [string, string][] = job.testReportPath === '' ? [] : [[job.testReportPath, reportEntryName]];
  for (const protectedPath of job.protectedPaths) collect.push([protectedPath, protectedPath]);
  const spec = {
    workDir: workDirectory,
    timeoutMs: limits.timeoutMs,
    outputLimit: limits.outputLimitBytes,
    env: commandEnvironment(job.env, limits),
    commands: job.commands.map((command) => ({
      name: command.name,
      argv: command.argv,
      cwd: command.workingDirectory,
      timeoutMs: msOf(command.timeout),
    })),
    rlimits: rlimitsOf(limits, options),
    collect,
    collectNames: job.protectedPaths.length === 0 ? [] : testConfigNames,
    maxCollectBytes,
    maxCollectFiles,
    ...(options.relay === undefined ? {} : { relay: options.relay }),
    ...(options.exportDirectory === undefined ? {} : { export: { directory: options.exportDirectory } }),
  };
  return Buffer.concat([lengthPrefixed(Buffer.from(JSON.stringify(spec))), lengthPrefixed(packFiles([...job.files, ...job.dataFiles]))]);
}

/**
 * The supervisor's stdin that starts a session: the spec (session mode,
 * `limits.timeoutMs` as the default command timeout) and the files. The
 * supervisor exits when no request comes for `idleSeconds`, so a session
 * outlives its runner by that much at most.
 */
export function sessionInput(files: readonly WorkFile[], env: Readonly<Record<string, string>>, limits: EffectiveLimits, idleSeconds: number, options: SpecOptions = {}): Buffer {
  const spec = {
    session: true,
    workDir: workDirectory,
    timeoutMs: limits.timeoutMs,
    outputLimit: limits.outputLimitBytes,
    env: commandEnvironment(env, limits),
    commands: [],
    rlimits: rlimitsOf(limits, options),
    idleSeconds,
  };
  return Buffer.concat([lengthPrefixed(Buffer.from(JSON.stringify(spec))), lengthPrefixed(packFiles(files))]);
}

/** setrlimit values of every command: always-set ones, then the driver's extras. */
function rlimitsOf(limits: EffectiveLimits, options: SpecOptions): Record<string, number> {
  return {
    core: 0,
    nofile: 1024,
    fsize: limits.workDirBytes,
    cpu: Math.ceil(limits.timeoutMs / 1000) + 1,
    ...(options.extraRlimits?.nproc === undefined ? {} : { nproc: options.extraRlimits.nproc }),
    ...(options.extraRlimits?.as === undefined ? {} : { as: options.extraRlimits.as }),
  };
}

/** `data` preceded by its length, u32 big-endian, as the supervisor reads blocks. */
export function lengthPrefixed(data: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(data.length);
  return Buffer.concat([header, data]);
}

/** The files as records: u32 name length, name, u32 size, content (the supervisor makes directories). */
export function packFiles(files: readonly WorkFile[]): Buffer {
  const parts: Buffer[] = [];
  for (const file of files) {
    parts.push(lengthPrefixed(Buffer.from(file.path, 'utf8')), lengthPrefixed(bytesOf(file)));
  }
  return Buffer.concat(parts);
}

/** Splits the supervisor's stdout into frames; chunks may cut a frame anywhere. */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const frames: Frame[] = [];
    let offset = 0;
    while (this.pending.length - offset >= 5) {
      const length = this.pending.readUInt32BE(offset + 1);
      if (this.pending.length - offset - 5 < length) break;
      frames.push({ type: this.pending[offset] as FrameType, payload: this.pending.subarray(offset + 5, offset + 5 + length) });
      offset += 5 + length;
    }
    this.pending = this.pending.subarray(offset);
    return frames;
  }

  /** The bytes of a frame not yet complete; the reader is empty afterwards. */
  drain(): Buffer {
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    return rest;
  }
}

/** What an output archive held: regular files by name, and the entries refused with why. */
export interface Outputs {
  readonly files: ReadonlyMap<string, Buffer>;
  readonly rejected: readonly string[];
}

/**
 * Reads the supervisor's output archive, trusting nothing in it: only
 * regular files with a plain relative name are kept; symlinks, hardlinks,
 * devices, directories, names that are absolute or hold `..`, duplicates and
 * anything past the size and count caps are refused and listed.
 */
export async function readOutputs(archive: Buffer, caps = { maxBytes: maxCollectBytes, maxFiles: maxCollectFiles }): Promise<Outputs> {
  const files = new Map<string, Buffer>();
  const rejected: string[] = [];
  if (archive.length === 0) return { files, rejected };
  const extract = tar.extract();
  let total = 0;
  let count = 0;
  extract.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (data: unknown) => {
      const chunk = data as Buffer;
      size += chunk.length;
      if (size <= caps.maxBytes) chunks.push(chunk);
    });
    stream.on('end', () => {
      count += 1;
      const name = header.name;
      const problem = entryProblem(name, header.type);
      if (problem !== undefined) rejected.push(`${name}: ${problem}`);
      else if (count > caps.maxFiles) rejected.push(`${name}: more than ${caps.maxFiles} files`);
      else if (files.has(name)) rejected.push(`${name}: appears twice`);
      else if (total + size > caps.maxBytes) rejected.push(`${name}: over the ${caps.maxBytes}-byte output cap`);
      else {
        total += size;
        files.set(name, Buffer.concat(chunks));
      }
      next();
    });
    stream.resume();
  });
  await new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve);
    extract.on('error', reject);
    extract.end(archive);
  }).catch((error: unknown) => {
    rejected.push(`the output archive is malformed (${(error as Error).message}); entries after the fault were dropped`);
  });
  return { files, rejected };
}

function entryProblem(name: string, type: string | null | undefined): string | undefined {
  if (type !== 'file' && type !== null && type !== undefined) {
    if (type === 'symlink') return 'a symlink; only regular files are read back';
    if (type === 'link') return 'a hardlink; only regular files are read back';
    return `a ${type}; only regular files are read back`;
  }
  if (name === '' || name.startsWith('/')) return 'an absolute or empty name';
  if (name.split('/').some((part) => part === '..' || part === '.' || part === '')) return 'a name that leaves the work directory or is not normalised';
  if (name.includes('\0')) return 'a name with a NUL byte';
  return undefined;
}
