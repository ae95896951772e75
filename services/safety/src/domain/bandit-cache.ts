import { createHash } from 'node:crypto';
import type { SourceText } from './analyze';
import type { BanditError, BanditReport } from './bandit-findings';
import type { Detection } from './findings';

/** Bandit's report for one file: what it found there, and why it could not scan it, if it could not. */
interface FileScan {
  readonly detections: readonly Detection[];
  readonly errors: readonly BanditError[];
}

/**
 * Bandit's reports by file, keyed by path and content hash: a file an
 * iteration did not change (a test file, the original of a changed file in
 * a workspace task) is not sent to the sandbox again, and a check whose
 * Python files are all known runs no Bandit job at all. Bandit reads one
 * file at a time, so a file's report does not depend on the others in the
 * job. Least recently used entries go first once `maxEntries` are held.
 */
export class BanditCache {
  private readonly entries = new Map<string, FileScan>();

  constructor(private readonly maxEntries = 4_096) {}

  /** The files among `files` with a known report (their detections and errors together), and those still to scan. */
  split(files: readonly SourceText[]): { readonly known: BanditReport; readonly unknown: readonly SourceText[] } {
    const detections: Detection[] = [];
    const errors: BanditError[] = [];
    const unknown: SourceText[] = [];
    for (const file of files) {
      const key = keyOf(file);
      const scan = this.entries.get(key);
      if (scan === undefined) {
        unknown.push(file);
        continue;
      }
      // Read again: it moves to the end, the most recently used.
      this.entries.delete(key);
      this.entries.set(key, scan);
      detections.push(...scan.detections);
      errors.push(...scan.errors);
    }
    return { known: { detections, errors }, unknown };
  }

  /** Keeps what `report` says about each of `scanned` (the files of the job that made it). */
  remember(scanned: readonly SourceText[], report: BanditReport): void {
    for (const file of scanned) {
      const key = keyOf(file);
      this.entries.delete(key);
      this.entries.set(key, { detections: report.detections.filter((detection) => detection.path === file.path), errors: report.errors.filter((error) => error.path === file.path) });
    }
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

function keyOf(file: SourceText): string {
  return createHash('sha256').update(file.path).update('\0').update(file.content).digest('hex');
}
