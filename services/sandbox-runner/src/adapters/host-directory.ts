import { chmod, chown, lstat, mkdir, realpath, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { AppError, ErrorCode } from '@ratchet/errors';
import { directoryDifferences, firstBlocked, octalMode, pathChain, type DirectoryStatus, type HostUser, type WantedDirectory } from '../domain/host-access';

/** What ensureHostDirectory did. */
export interface HostDirectoryOutcome {
  /** It did not exist and was made. */
  readonly created: boolean;
  /** What was wrong with an existing one and was changed ("mode 0700 -> 0711"); empty when nothing. */
  readonly repaired: readonly string[];
}

/**
 * Makes `directory` a directory with exactly the mode, owner and group in
 * `wanted`, whatever was there before: it creates a missing one (parents
 * too), and repairs one that an older version, another umask or a hand-made
 * `mkdir` left with other bits or another owner. The mode is set with
 * chmod, never left to mkdir and the umask. A link or a file in its place
 * is neither followed nor replaced.
 *
 * @throws AppError FAILED_PRECONDITION naming what is wrong and the commands that fix it, when the path is not a directory or cannot be changed.
 */
export async function ensureHostDirectory(directory: string, wanted: WantedDirectory): Promise<HostDirectoryOutcome> {
  const fix = `chown ${wanted.uid}:${wanted.gid} ${directory} && chmod ${octalMode(wanted.mode)} ${directory}`;
  let current = await lstat(directory).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `cannot inspect the sandbox directory ${directory} (${error.code ?? error.message}); as root: mkdir -p ${directory} && ${fix}`, { cause: error });
  });
  const created = current === undefined;
  if (current === undefined) {
    current = await mkdir(directory, { recursive: true, mode: wanted.mode })
      .then(() => lstat(directory))
      .catch((error: NodeJS.ErrnoException) => {
        throw new AppError(ErrorCode.FAILED_PRECONDITION, `cannot create the sandbox directory ${directory} (${error.code ?? error.message}); as root: mkdir -p ${directory} && ${fix}`, { cause: error });
      });
  }
  if (!current.isDirectory()) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `${directory} is ${kindOf(current)}, not a directory; the sandbox runner keeps its sandboxes' file systems there and will not follow or replace it: remove it (rm ${directory}) and start the runner again`);
  }
  const differences = directoryDifferences(statusOf(directory, current), wanted);
  if (differences.length === 0) return { created, repaired: [] };
  try {
    // chown first: it can clear set-id bits that chmod then sets as wanted.
    if (current.uid !== wanted.uid || current.gid !== wanted.gid) await chown(directory, wanted.uid, wanted.gid);
    await chmod(directory, wanted.mode);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `the sandbox directory ${directory} is mode ${octalMode(current.mode)}, owner ${current.uid}:${current.gid}, and the runner cannot change it (${reason}); it needs mode ${octalMode(wanted.mode)}, owner ${wanted.uid}:${wanted.gid}: as root, ${fix}`, { cause: error });
  }
  // Only what an existing directory had wrong is a repair; a new one is just made right.
  return { created, repaired: created ? [] : differences };
}

/**
 * The first directory `user` cannot enter on the way to `target`, through
 * the path as given and through its links resolved; undefined when it can
 * reach it (or the path does not exist, which callers check themselves).
 */
export async function blockedOnTheWay(target: string, user: HostUser): Promise<DirectoryStatus | undefined> {
  const resolved = await realpath(target).catch(() => target);
  const paths = [...new Set([...pathChain(target), ...pathChain(resolved)])];
  const statuses = await Promise.all(paths.map((entry) => stat(entry).then((found) => (found.isDirectory() ? statusOf(entry, found) : undefined), () => undefined)));
  return firstBlocked(
    statuses.filter((status): status is DirectoryStatus => status !== undefined),
    user,
  );
}

function statusOf(path: string, found: Stats): DirectoryStatus {
  return { path, mode: found.mode, uid: found.uid, gid: found.gid };
}

function kindOf(found: Stats): string {
  if (found.isSymbolicLink()) return 'a symbolic link';
  if (found.isFile()) return 'a file';
  return 'a special file';
}
