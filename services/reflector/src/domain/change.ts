import { countTokens, truncateToTokens } from '@ratchet/agent';
import type { SourceFile } from '@ratchet/contracts';
import { structuredPatch } from 'diff';

/** Lines of unchanged context around each change, as `git diff` shows by default. */
const contextLines = 3;

/** Tokens the change may take in a reviewer's or auditor's prompt by default. */
export const defaultChangeTokens = 24_000;

/** How one file of the change changed. */
export const ChangeKind = { ADDED: 'added', MODIFIED: 'modified' } as const;
export type ChangeKind = (typeof ChangeKind)[keyof typeof ChangeKind];

/** One file the change adds or modifies. */
export interface ChangedFile {
  readonly path: string;
  readonly kind: ChangeKind;
  /** Lines of the new content. */
  readonly lines: number;
}

/** A change as a reviewer reads it. */
export interface Change {
  /** The files the change adds or modifies, in path order. */
  readonly files: readonly ChangedFile[];
  /** Every file after the change (changed or not), path -> number of lines: where a finding may point. */
  readonly existing: ReadonlyMap<string, number>;
  /** The change as prompt text: a unified diff with new-file line numbers, new files whole; '(no change)' when nothing changed. */
  readonly text: string;
  /** Changed files not shown because the budget ran out. */
  readonly leftOut: readonly string[];
}

/** Lines of `content`, not counting the empty string after a final newline. */
export function lineCount(content: string): number {
  if (content === '') return 0;
  const lines = content.split('\n').length;
  return content.endsWith('\n') ? lines - 1 : lines;
}

/**
 * The change from `base` to `after` for a reviewer: every file of `after`
 * that is new or differs from `base`, in path order. A modified file is a
 * unified diff (3 lines of context) whose lines carry their number in the
 * new file, so a finding can name the line; a new file is shown whole, every
 * line numbered. A file of `base` missing from `after` is taken as unchanged
 * (`after` may hold every file or only the changed ones), so deletions are
 * not shown. Files are added while they fit `budgetTokens` (default
 * `defaultChangeTokens`); a file that does not fit is cut, and the files
 * after it are listed by path.
 */
export function describeChange(base: readonly SourceFile[], after: readonly SourceFile[], budgetTokens = defaultChangeTokens): Change {
  const before = new Map(base.map((file) => [file.path, file.content]));
  const existing = new Map<string, number>(base.map((file) => [file.path, lineCount(file.content)]));
  const next = new Map(after.map((file) => [file.path, file.content]));
  for (const [path, content] of next) existing.set(path, lineCount(content));

  const files: ChangedFile[] = [];
  const sections: string[] = [];
  for (const path of [...next.keys()].sort(comparePaths)) {
    const content = next.get(path) as string;
    const old = before.get(path);
    if (old === content) continue;
    const kind = old === undefined ? ChangeKind.ADDED : ChangeKind.MODIFIED;
    files.push({ path, kind, lines: lineCount(content) });
    sections.push(kind === ChangeKind.ADDED ? newFileText(path, content) : diffText(path, old as string, content));
  }
  if (files.length === 0) return { files, existing, text: '(no change)', leftOut: [] };

  const header = `${files.length} file${files.length === 1 ? '' : 's'} changed (+ added, - removed; the number is the line in the new file):`;
  const shown: string[] = [header];
  let used = countTokens(header);
  const leftOut: string[] = [];
  sections.forEach((section, index) => {
    const path = files[index]?.path ?? '';
    if (leftOut.length > 0) {
      leftOut.push(path);
      return;
    }
    const tokens = countTokens(section) + 2;
    if (used + tokens <= budgetTokens) {
      shown.push(section);
      used += tokens;
      return;
    }
    const room = budgetTokens - used - 40;
    if (room > 200) {
      shown.push(`${truncateToTokens(section, room)}\n... (the rest of ${path} is cut: the change is larger than the review's budget)`);
      used = budgetTokens;
      return;
    }
    leftOut.push(path);
  });
  if (leftOut.length > 0) shown.push(`(${leftOut.length} more changed file${leftOut.length === 1 ? '' : 's'} not shown, over the review's budget: ${leftOut.join(', ')})`);
  return { files, existing, text: shown.join('\n\n'), leftOut };
}

function newFileText(path: string, content: string): string {
  const lines = splitLines(content);
  return [`+++ b/${path} (new file, ${lines.length} line${lines.length === 1 ? '' : 's'})`, ...lines.map((line, index) => `+${numbered(index + 1)}${line}`)].join('\n');
}

function diffText(path: string, old: string, content: string): string {
  const patch = structuredPatch(`a/${path}`, `b/${path}`, old, content, undefined, undefined, { context: contextLines });
  const out = [`--- a/${path}`, `+++ b/${path}`];
  for (const hunk of patch.hunks) {
    out.push(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`);
    let newLine = hunk.newStart;
    for (const line of hunk.lines) {
      const marker = line.charAt(0);
      const text = line.slice(1);
      if (marker === '-') out.push(`-${blank}${text}`);
      else if (marker === '+' || marker === ' ') {
        out.push(`${marker}${numbered(newLine)}${text}`);
        newLine += 1;
      } else out.push(line); // "\ No newline at end of file"
    }
  }
  return out.join('\n');
}

const numberWidth = 5;
const blank = `${' '.repeat(numberWidth)} | `;

function numbered(line: number): string {
  return `${String(line).padStart(numberWidth)} | `;
}

function splitLines(content: string): string[] {
  if (content === '') return [];
  const lines = content.split('\n');
  if (content.endsWith('\n')) lines.pop();
  return lines;
}

function comparePaths(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
