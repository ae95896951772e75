import type { DataFile, SourceFile } from '@ratchet/contracts';

/** A file of the work directory: a text file (UTF-8) or a data file (its bytes as they are). */
export type WorkFile = SourceFile | DataFile;

/** A work file's bytes: text as UTF-8, data as it is. */
export function bytesOf(file: WorkFile): Buffer {
  return typeof file.content === 'string' ? Buffer.from(file.content, 'utf8') : Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength);
}
