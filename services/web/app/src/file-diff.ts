import { structuredPatch } from 'diff';
import type { SourceFile } from './types';

// What changed in the code between two iterations (each holds a snapshot of
// the files it wrote), as unified-diff hunks per file. Pure; tested in
// file-diff.spec.ts.

export interface DiffLine {
  readonly kind: 'added' | 'removed' | 'context';
  readonly text: string;
  /** Line number in the old file (removed, context) and in the new one (added, context). */
  readonly oldLine?: number;
  readonly newLine?: number;
}

export interface DiffHunk {
  readonly header: string;
  readonly lines: readonly DiffLine[];
}

export interface FileDiff {
  readonly path: string;
  readonly change: 'added' | 'removed' | 'changed';
  readonly added: number;
  readonly removed: number;
  readonly hunks: readonly DiffHunk[];
}

/**
 * The files that differ from `before` to `after` (by path, sorted), with
 * `context` lines around each change. Files alike in both are left out.
 */
export function diffFiles(before: readonly SourceFile[], after: readonly SourceFile[], context = 3): FileDiff[] {
  const old = new Map(before.map((file) => [file.path ?? '', file.content ?? '']));
  const next = new Map(after.map((file) => [file.path ?? '', file.content ?? '']));
  const paths = [...new Set([...old.keys(), ...next.keys()])].filter((path) => path !== '').sort();
  const diffs: FileDiff[] = [];
  for (const path of paths) {
    const oldText = old.get(path);
    const newText = next.get(path);
    if (oldText === newText) continue;
    const patch = structuredPatch(path, path, oldText ?? '', newText ?? '', undefined, undefined, { context });
    let added = 0;
    let removed = 0;
    const hunks = patch.hunks.map((hunk) => {
      let oldLine = hunk.oldStart;
      let newLine = hunk.newStart;
      const lines: DiffLine[] = [];
      for (const raw of hunk.lines) {
        // "\ No newline at end of file" says something of the line before; it is no line of the file.
        if (raw.startsWith('\\')) continue;
        const text = raw.slice(1);
        if (raw.startsWith('+')) {
          added += 1;
          lines.push({ kind: 'added', text, newLine: newLine++ });
        } else if (raw.startsWith('-')) {
          removed += 1;
          lines.push({ kind: 'removed', text, oldLine: oldLine++ });
        } else {
          lines.push({ kind: 'context', text, oldLine: oldLine++, newLine: newLine++ });
        }
      }
      return { header: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`, lines };
    });
    diffs.push({ path, change: oldText === undefined ? 'added' : newText === undefined ? 'removed' : 'changed', added, removed, hunks });
  }
  return diffs;
}
