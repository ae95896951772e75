// Computes SHA-256 checksums of files.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

export function checksum(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}
