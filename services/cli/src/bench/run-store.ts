import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, truncate, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { resultFormat, resultKey, type TaskResult } from './result';

// A run directory: run.json (which suite, its hash, the run id), results.jsonl
// (one line per finished pass, repeat and task, appended and fsynced as each
// ends, so an interrupted run loses nothing that finished), report.md, and a
// lock so two benches never write one directory at once.

export const runFileName = 'run.json';
export const resultsFileName = 'results.jsonl';
export const reportFileName = 'report.md';
const lockFileName = 'lock';
const runFormat = 1;

/** What must match for a rerun to add to a run directory's results. */
export interface RunIdentity {
  readonly suiteName: string;
  /** Absolute path of the suite when the run started (for the report). */
  readonly source: string;
  readonly suiteHash: string;
  /** --max-iterations, or null when each task's own or the configured default applies. */
  readonly maxIterations: number | null;
}

/** run.json. */
export interface RunInfo extends RunIdentity {
  readonly format: number;
  /** Names this run's memories on a server and its task request ids. */
  readonly runId: string;
  /** ISO 8601. */
  readonly createdAt: string;
}

export class RunStore {
  private readonly finished: Map<string, TaskResult>;
  /** Appends one at a time, in the order results arrive. */
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    readonly dir: string,
    readonly info: RunInfo,
    results: readonly TaskResult[],
    /** Lines of results.jsonl that were skipped, for the user. */
    readonly notes: readonly string[],
    private readonly resultsFile: FileHandle,
    private readonly lock: string,
  ) {
    this.finished = new Map(results.map((result) => [resultKey(result), result]));
  }

  /**
   * Opens (or starts) the run directory `dir` for a suite: takes its lock,
   * checks that it holds results of this very suite and budget, and reads
   * them. A line cut short by a crash at the end of results.jsonl is
   * dropped (its task had not been recorded as finished).
   *
   * @throws AppError FAILED_PRECONDITION when another bench holds the lock,
   *   the suite's hash or --max-iterations differ from the run's (saying how
   *   to start a new run instead), or the directory has results but no run.json.
   */
  static async open(dir: string, identity: RunIdentity, now: Date = new Date()): Promise<RunStore> {
    await mkdir(dir, { recursive: true });
    const lock = await takeLock(dir);
    try {
      const info = await readOrStartRun(dir, identity, now);
      const { results, notes } = await readResults(path.join(dir, resultsFileName));
      const handle = await open(path.join(dir, resultsFileName), 'a');
      await syncDirectory(dir);
      return new RunStore(dir, info, results, notes, handle, lock);
    } catch (error) {
      await rm(lock, { force: true });
      throw error;
    }
  }

  /** Every finished result, old and new. */
  all(): TaskResult[] {
    return [...this.finished.values()];
  }

  has(key: string): boolean {
    return this.finished.has(key);
  }

  /** Appends a result as one line and fsyncs it before resolving. */
  append(result: TaskResult): Promise<void> {
    this.finished.set(resultKey(result), result);
    const line = `${JSON.stringify(result)}\n`;
    const written = this.writing.then(async () => {
      await this.resultsFile.write(line);
      await this.resultsFile.sync();
    });
    // The caller hears of a failed write; the next append still runs.
    this.writing = written.catch(() => undefined);
    return written;
  }

  /** Replaces report.md (written aside, then renamed, so a reader never sees half of it). */
  async writeReport(markdown: string): Promise<string> {
    const file = path.join(this.dir, reportFileName);
    await writeDurably(file, markdown);
    return file;
  }

  /** Waits for pending appends, closes the results file and releases the lock. */
  async close(): Promise<void> {
    await this.writing;
    await this.resultsFile.close().catch(() => undefined);
    await rm(this.lock, { force: true });
  }
}

/** `20250102T030405Z-1a2b3c`: sortable, and valid in a memory project key. */
function newRunId(now: Date): string {
  return `${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;
}

async function readOrStartRun(dir: string, identity: RunIdentity, now: Date): Promise<RunInfo> {
  const runFile = path.join(dir, runFileName);
  let text: string | undefined;
  try {
    text = await readFile(runFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text === undefined) {
    const existing = await readFile(path.join(dir, resultsFileName), 'utf8').catch(() => '');
    if (existing.trim() !== '') {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `${dir} has results but no ${runFileName}, so they cannot be matched to a suite; use another --out DIR, or delete ${dir} to start over`);
    }
    const info: RunInfo = { format: runFormat, ...identity, runId: newRunId(now), createdAt: now.toISOString() };
    await writeDurably(runFile, `${JSON.stringify(info, null, 2)}\n`);
    return info;
  }
  let info: RunInfo;
  try {
    info = JSON.parse(text) as RunInfo;
  } catch (error) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `${runFile} is not valid JSON (${String(error)}); use another --out DIR, or delete ${dir} to start over`, { cause: error });
  }
  if (info.format !== runFormat || typeof info.runId !== 'string') {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `${runFile} is not a run of this version of ratchet bench; use another --out DIR, or delete ${dir} to start over`);
  }
  if (info.suiteHash !== identity.suiteHash) {
    throw new AppError(
      ErrorCode.FAILED_PRECONDITION,
      `${dir} holds results of a different version of suite ${info.suiteName} (suite hash ${info.suiteHash.slice(0, 12)}, now ${identity.suiteHash.slice(0, 12)}): ` +
        `results of a changed suite cannot be mixed. Keep them and start a new run with --out ANOTHER_DIR, or delete ${dir} to start over.`,
    );
  }
  if (info.maxIterations !== identity.maxIterations) {
    const said = (value: number | null) => (value === null ? 'no --max-iterations' : `--max-iterations ${value}`);
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `${dir} was run with ${said(info.maxIterations)}, this command has ${said(identity.maxIterations)}: run with the same budget, or use --out ANOTHER_DIR`);
  }
  return info;
}

async function readResults(file: string): Promise<{ results: TaskResult[]; notes: string[] }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { results: [], notes: [] };
    throw error;
  }
  const notes: string[] = [];
  const end = text.lastIndexOf('\n') + 1;
  if (end < text.length) {
    // A crash cut the last line: that task had not finished being recorded, so it runs again.
    await truncate(file, Buffer.byteLength(text.slice(0, end), 'utf8'));
    notes.push(`${resultsFileName}: dropped an unfinished last line (a run was stopped while writing it); that task runs again`);
  }
  const results: TaskResult[] = [];
  text
    .slice(0, end)
    .split('\n')
    .forEach((line, index) => {
      if (line.trim() === '') return;
      try {
        const result = JSON.parse(line) as TaskResult;
        if (result.format !== resultFormat) notes.push(`${resultsFileName} line ${index + 1}: format ${String(result.format)}, not ${resultFormat}; ignored`);
        else results.push(result);
      } catch {
        notes.push(`${resultsFileName} line ${index + 1} is not JSON; ignored (its task runs again)`);
      }
    });
  return { results, notes };
}

async function takeLock(dir: string): Promise<string> {
  const lock = path.join(dir, lockFileName);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const handle = await open(lock, 'wx');
      await handle.write(`${process.pid}\n`);
      await handle.close();
      return lock;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = Number((await readFile(lock, 'utf8').catch(() => '')).trim());
    if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `another ratchet bench (process ${pid}) is running in ${dir}; wait for it to end, or stop it and run this again`);
    }
    // Left by a bench that was killed: take it over.
    await rm(lock, { force: true });
  }
  throw new AppError(ErrorCode.FAILED_PRECONDITION, `cannot take the lock ${lock}; another ratchet bench may be starting in ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function writeDurably(file: string, content: string): Promise<void> {
  const aside = `${file}.${process.pid}.tmp`;
  const handle = await open(aside, 'w');
  try {
    await handle.write(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(aside, file);
  await syncDirectory(path.dirname(file));
}

/** Makes a new or renamed file's directory entry durable. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
