/** Device files that code may write to without touching anything that persists. */
const harmlessDevices = new Set(['/dev/null', '/dev/stdout', '/dev/stderr', 'nul', 'NUL']);

/** True for a path that starts at a root rather than at the working directory: `/`, `\`, `~`, or a drive letter. */
export function isRootedPath(literal: string): boolean {
  return literal.startsWith('/') || literal.startsWith('\\') || literal.startsWith('~') || /^[A-Za-z]:/.test(literal);
}

/**
 * Directories private to the sandbox, where code may write freely: each
 * sandbox has its own /tmp, gone when the sandbox is (config/safety.yaml's
 * `commands.scratchDirectories` says the same for commands).
 */
export const scratchDirectories: readonly string[] = ['/tmp'];

/**
 * True when a literal path used by a writing call points outside the
 * workspace: absolute (`/etc/x`, `C:\x`, `\\server\share`), home-relative
 * (`~/x`), or climbing above the working directory with `..`
 * (`../../x`; `a/../b` stays inside). Writes to /dev/null, the standard
 * streams and the scratch directory /tmp (`/tmp/x`, not `/tmp/../etc/x`)
 * are not escapes.
 */
export function escapesWorkspace(literal: string): boolean {
  if (harmlessDevices.has(literal) || inScratchDirectory(literal)) return false;
  if (isRootedPath(literal)) return true;
  let depth = 0;
  for (const segment of literal.split(/[\\/]/)) {
    if (segment === '..') depth -= 1;
    else if (segment !== '' && segment !== '.') depth += 1;
    if (depth < 0) return true;
  }
  return false;
}

/**
 * Joins literal path parts the way `os.path.join`/`pathlib` and
 * `path.resolve` do when `restartAtRoot` is set (a rooted part discards what
 * came before), or the way `path.join` does otherwise (parts are concatenated).
 */
export function joinPaths(parts: readonly string[], restartAtRoot: boolean): string {
  let joined = '';
  for (const part of parts) {
    if (joined === '' || (restartAtRoot && isRootedPath(part))) joined = part;
    else if (part !== '') joined = `${joined.replace(/[\\/]+$/, '')}/${part.replace(/^[\\/]+/, '')}`;
  }
  return joined;
}

/** True for an absolute path that, once `.` and `..` are resolved, lies in a scratch directory. */
function inScratchDirectory(literal: string): boolean {
  if (!literal.startsWith('/')) return false;
  const segments: string[] = [];
  for (const segment of literal.split('/')) {
    if (segment === '..') segments.pop();
    else if (segment !== '' && segment !== '.') segments.push(segment);
  }
  const normalized = `/${segments.join('/')}`;
  return scratchDirectories.some((directory) => normalized === directory || normalized.startsWith(`${directory}/`));
}
