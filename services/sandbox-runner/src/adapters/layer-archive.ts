import { createReadStream } from 'node:fs';
import { chmod, lstat, mkdir, open, symlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';

/** The archive held more file bytes than allowed. */
export class LayerTooLarge extends Error {}

/** What extractLayer wrote. */
export interface ExtractedLayer {
  /** Bytes of file content. */
  readonly bytes: number;
  readonly files: number;
  /** Entries left out (devices, hard links), with why. */
  readonly skipped: readonly string[];
}

/** Most entries one layer may have (a big node_modules has some tens of thousands). */
const maxEntries = 500_000;

/**
 * Writes the install sandbox's exported tar (names below `strip`, e.g.
 * `layer/python/...`) into `destination`, an empty directory of the runner's,
 * trusting nothing in it: names must be relative and stay inside; every
 * directory on the way is one this function made (so no entry is written
 * through a symlink an earlier entry planted); files are created new
 * (O_EXCL), owned by the runner, mode 0644 or 0755, never set-id;
 * directories 0755; symlinks are kept as they are (they resolve inside the
 * sandbox the layer is mounted in, read-only); anything else is skipped.
 * The file mtimes are kept, so Python's compiled files stay valid.
 *
 * @throws LayerTooLarge past `maxBytes` of file content; Error for a malformed archive or a hostile name.
 */
export async function extractLayer(archive: string, destination: string, strip: string, maxBytes: number): Promise<ExtractedLayer> {
  const made = new Set<string>(['']);
  const skipped: string[] = [];
  let bytes = 0;
  let files = 0;
  let entries = 0;

  const ensureDirectory = async (relative: string): Promise<void> => {
    if (made.has(relative)) return;
    await ensureDirectory(path.posix.dirname(relative) === '.' ? '' : path.posix.dirname(relative));
    const target = path.join(destination, relative);
    try {
      await mkdir(target);
    } catch (error) {
      const found = (error as NodeJS.ErrnoException).code === 'EEXIST' ? await lstat(target) : undefined;
      // Only something this function made may stand there, and a directory it made is in `made`: anything else is an earlier entry (a link, a file).
      throw new Error(`${relative}: ${found === undefined ? (error as Error).message : found.isSymbolicLink() ? 'a directory where the archive put a symlink' : 'a directory where the archive put a file'}`);
    }
    await chmod(target, 0o755);
    made.add(relative);
  };

  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    const handle = async (): Promise<void> => {
      entries += 1;
      if (entries > maxEntries) throw new Error(`more than ${maxEntries} entries`);
      const relative = relativeName(header.name, strip);
      if (relative === undefined) throw new Error(`${header.name}: a name outside ${strip}/ or one that leaves it`);
      if (relative === '') {
        stream.resume();
        return;
      }
      const parent = path.posix.dirname(relative) === '.' ? '' : path.posix.dirname(relative);
      if (header.type === 'directory') {
        stream.resume();
        await ensureDirectory(relative);
        return;
      }
      await ensureDirectory(parent);
      const target = path.join(destination, relative);
      if (header.type === 'file' || header.type === 'contiguous-file') {
        bytes += header.size ?? 0;
        if (bytes > maxBytes) throw new LayerTooLarge(`over ${maxBytes} bytes`);
        const file = await open(target, 'wx', 0o600);
        await file.chmod((header.mode ?? 0) & 0o111 ? 0o755 : 0o644).catch(async (error: unknown) => {
          await file.close();
          throw error;
        });
        // The write stream closes the file when done or failed.
        await pipeline(stream, file.createWriteStream());
        // Made just now with O_EXCL below directories made here: the path is this file.
        if (header.mtime !== undefined) await utimes(target, header.mtime, header.mtime);
        files += 1;
        return;
      }
      stream.resume();
      if (header.type === 'symlink' && header.linkname !== undefined && header.linkname !== null && !header.linkname.includes('\0')) {
        await symlink(header.linkname, target);
        return;
      }
      skipped.push(`${relative}: a ${header.type ?? 'special entry'}; only files, directories and symlinks are kept`);
    };
    handle().then(
      () => next(),
      (error: unknown) => next(error as Error),
    );
  });
  await pipeline(createReadStream(archive), extract);
  return { bytes, files, skipped };
}

/** The entry's name below `strip`/ ('' for `strip` itself), or undefined when it is elsewhere or not a plain relative name. */
function relativeName(name: string, strip: string): string | undefined {
  const trimmed = name.replace(/\/+$/, '');
  if (trimmed === strip) return '';
  if (!trimmed.startsWith(`${strip}/`) || trimmed.includes('\0')) return undefined;
  const rest = trimmed.slice(strip.length + 1);
  if (rest.split('/').some((part) => part === '' || part === '.' || part === '..')) return undefined;
  return rest;
}
