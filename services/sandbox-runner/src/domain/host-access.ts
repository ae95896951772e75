/** What the host says of one directory: permission bits, owner and group. */
export interface DirectoryStatus {
  readonly path: string;
  /** st_mode; only the permission bits (07777) are read. */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

/** The permission bits, owner and group a directory must have. */
export interface WantedDirectory {
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

/** A host user, without supplementary groups (the sandbox user has none). */
export interface HostUser {
  readonly uid: number;
  readonly gid: number;
}

/** Permission bits in octal as `ls`-free tools print them: 0711, 1777. */
export function octalMode(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

/**
 * What differs between a directory and what it must be, one entry per
 * field ("mode 0700 -> 0711", "owner 1000:1000 -> 0:0"); empty when nothing
 * does.
 */
export function directoryDifferences(current: DirectoryStatus, wanted: WantedDirectory): string[] {
  const differences: string[] = [];
  if ((current.mode & 0o7777) !== (wanted.mode & 0o7777)) differences.push(`mode ${octalMode(current.mode)} -> ${octalMode(wanted.mode)}`);
  if (current.uid !== wanted.uid || current.gid !== wanted.gid) differences.push(`owner ${current.uid}:${current.gid} -> ${wanted.uid}:${wanted.gid}`);
  return differences;
}

/**
 * Whether `user` may enter (search) a directory by its permission bits:
 * the owner's bit if the user owns it, else the group's if it is the
 * user's group, else everyone's. uid 0 always may. ACLs are not read.
 */
export function canEnter(directory: DirectoryStatus, user: HostUser): boolean {
  if (user.uid === 0) return true;
  if (directory.uid === user.uid) return (directory.mode & 0o100) !== 0;
  if (directory.gid === user.gid) return (directory.mode & 0o010) !== 0;
  return (directory.mode & 0o001) !== 0;
}

/**
 * The first directory of `chain` (outermost first) that `user` cannot
 * enter, or undefined when every one lets it through.
 */
export function firstBlocked(chain: readonly DirectoryStatus[], user: HostUser): DirectoryStatus | undefined {
  return chain.find((directory) => !canEnter(directory, user));
}

/**
 * The directories a process walks through to reach `target` (an absolute
 * POSIX path), outermost first: `/a/b` gives `/`, `/a`, `/a/b`.
 */
export function pathChain(target: string): string[] {
  const parts = target.split('/').filter((part) => part !== '' && part !== '.');
  return ['/', ...parts.map((_, index) => `/${parts.slice(0, index + 1).join('/')}`)];
}
