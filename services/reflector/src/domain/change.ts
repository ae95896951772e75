import { countTokens } from '@ratchet/agent';
import { shareTokens } from '@ratchet/prompting';
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
  /** The change as prompt text within the budget `describeChange` was given: see `fitChange`. */
  readonly text: string;
  /** Changed files not shown because the budget ran out. */
  readonly leftOut: readonly string[];
  /** Each changed file's diff in hunks, for `fitChange`. */
  readonly parts: readonly ChangePart[];
}

/** One changed file's diff: its header lines and its hunks (a new file's lines in chunks), each a whole unit of the text. */
export interface ChangePart {
  readonly path: string;
  readonly header: string;
  readonly hunks: readonly Hunk[];
}

/** A hunk: its text (with its `@@` line) and the lines of the new file it covers. */
export interface Hunk {
  readonly text: string;
  readonly newStart: number;
  readonly newEnd: number;
}

/** A changed file's text as a change shows it. */
interface ShownPart {
  readonly text: string;
  readonly tokens: number;
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
 * not shown. The text is fitted to `budgetTokens` (default
 * `defaultChangeTokens`) as `fitChange` does.
 */
export function describeChange(base: readonly SourceFile[], after: readonly SourceFile[], budgetTokens = defaultChangeTokens): Change {
  const before = new Map(base.map((file) => [file.path, file.content]));
  const existing = new Map<string, number>(base.map((file) => [file.path, lineCount(file.content)]));
  const next = new Map(after.map((file) => [file.path, file.content]));
  for (const [path, content] of next) existing.set(path, lineCount(content));

  const files: ChangedFile[] = [];
  const parts: ChangePart[] = [];
  for (const path of [...next.keys()].sort(comparePaths)) {
    const content = next.get(path) as string;
    const old = before.get(path);
    if (old === content) continue;
    const kind = old === undefined ? ChangeKind.ADDED : ChangeKind.MODIFIED;
    files.push({ path, kind, lines: lineCount(content) });
    parts.push(kind === ChangeKind.ADDED ? newFilePart(path, content) : diffPart(path, old as string, content));
  }
  const change = { files, existing, text: '(no change)', leftOut: [] as string[], parts };
  if (files.length === 0) return change;
  return { ...change, ...fitChange(change, budgetTokens) };
}

/** Tokens one changed file needs at least to be shown; with less it is listed by path. */
const minPartTokens = 120;

/**
 * A change's text in at most `budgetTokens` tokens: every file's diff whole
 * while they all fit; else each file gets a share (a small file what it
 * needs, the large ones the rest in equal parts) and shows its hunks in
 * order while they fit, the hunks left out named by their lines in the new
 * file; a first hunk larger than the share is shown from its start, the rest
 * of it named. A hunk is never cut in its middle. Files whose share would be
 * too small to show anything are listed by path at the end.
 */
export function fitChange(change: Pick<Change, 'files' | 'parts'>, budgetTokens: number): { readonly text: string; readonly leftOut: readonly string[] } {
  const { files, parts } = change;
  if (parts.length === 0) return { text: '(no change)', leftOut: [] };
  const budget = Math.max(0, Math.floor(budgetTokens));
  const header = `${files.length} file${files.length === 1 ? '' : 's'} changed (+ added, - removed; the number is the line in the new file):`;
  const wholeTexts = parts.map((part) => [part.header, ...part.hunks.map((hunk) => hunk.text)].join('\n'));
  const whole = [header, ...wholeTexts].join('\n\n');
  const wholeTokens = countTokens(whole);
  if (wholeTokens <= budget) return { text: whole, leftOut: [] };

  const listReserve = countTokens(`(${parts.length} more changed files not shown, over the review's budget: ${parts.map((part) => part.path).join(', ')})`);
  const room = Math.max(0, budget - countTokens(header) - Math.min(listReserve, Math.floor(budget / 4)) - 4);
  const needs = wholeTexts.map((text) => countTokens(text) + 2);
  // Files whose share is too small to show anything go to the list, from the last.
  let shown = parts.length;
  let shares = shareTokens(needs.slice(0, shown), room);
  while (shown > 1 && shares.some((share, index) => share < Math.min(minPartTokens, needs[index] ?? 0))) {
    shown -= 1;
    shares = shareTokens(needs.slice(0, shown), room);
  }
  const texts: string[] = [header];
  let granted = room - shares.reduce((sum, share) => sum + share, 0);
  let used = 0;
  const leftOut: string[] = [];
  parts.forEach((part, index) => {
    if (index >= shown) {
      leftOut.push(part.path);
      return;
    }
    granted += shares[index] ?? 0;
    const fitted = fitPart(part, granted - used - 2);
    if (fitted === undefined) {
      leftOut.push(part.path);
      return;
    }
    texts.push(fitted.text);
    used += fitted.tokens + 2;
  });
  const list = leftOut.length === 0 ? [] : [`(${leftOut.length} more changed file${leftOut.length === 1 ? '' : 's'} not shown, over the review's budget: ${leftOut.join(', ')})`];
  let text = [...texts, ...list].join('\n\n');
  // The seams count a little more than the parts: the list is shortened, at worst to its count.
  if (countTokens(text) > budget && list.length > 0) text = [...texts, cutList(list[0] as string, budget - countTokens(texts.join('\n\n')) - 4, leftOut.length)].join('\n\n');
  return { text, leftOut };
}

/** A file's header and as many of its hunks as fit `share`, the others named; undefined when not even a line of the first fits. */
function fitPart(part: ChangePart, share: number): ShownPart | undefined {
  const render = (hunks: readonly Hunk[], omitted: readonly Hunk[], cutFrom?: Hunk) => {
    const dropped = joinRanges([...(cutFrom === undefined ? [] : [cutFrom]), ...omitted]);
    const note = dropped.length === 0 ? [] : [`... (over the review's budget, not shown: new lines ${dropped.map((range) => (range.newStart === range.newEnd ? `${range.newStart}` : `${range.newStart}-${range.newEnd}`)).join(', ')} of ${part.path})`];
    return [part.header, ...hunks.map((hunk) => hunk.text), ...note].join('\n');
  };
  for (let kept = part.hunks.length; kept >= 1; kept -= 1) {
    const text = render(part.hunks.slice(0, kept), part.hunks.slice(kept));
    const tokens = countTokens(text);
    if (tokens <= share) return { text, tokens };
  }
  // The first hunk alone is too large: its start, by bisection on its lines.
  const first = part.hunks[0];
  if (first === undefined) return undefined;
  const lines = first.text.split('\n');
  let low = 1;
  let high = lines.length - 1;
  let best: ShownPart | undefined;
  while (low <= high) {
    const count = Math.floor((low + high) / 2);
    const shownLines = lines.slice(0, count);
    // Lines of the new file carry a `+` or a space; removed lines and the `@@` line do not count.
    const lastShown = first.newStart + shownLines.filter((line) => line.startsWith('+') || line.startsWith(' ')).length - 1;
    const rest = { text: '', newStart: Math.min(first.newEnd, lastShown + 1), newEnd: first.newEnd };
    const text = render([{ ...first, text: shownLines.join('\n') }], part.hunks.slice(1), rest);
    const tokens = countTokens(text);
    if (tokens <= share) {
      best = { text, tokens };
      low = count + 1;
    } else high = count - 1;
  }
  return best;
}

/** Line ranges of hunks, those that follow on from each other joined: a new file's chunks `1-40, 41-80` are `1-80`. */
function joinRanges(hunks: readonly Hunk[]): { readonly newStart: number; readonly newEnd: number }[] {
  const ranges: { newStart: number; newEnd: number }[] = [];
  for (const hunk of hunks) {
    const last = ranges[ranges.length - 1];
    if (last !== undefined && hunk.newStart <= last.newEnd + 1) last.newEnd = Math.max(last.newEnd, hunk.newEnd);
    else ranges.push({ newStart: hunk.newStart, newEnd: hunk.newEnd });
  }
  return ranges;
}

/** The list of files left out in `maxTokens`, else just their count. */
function cutList(list: string, maxTokens: number, count: number): string {
  if (countTokens(list) <= maxTokens) return list;
  return `(${count} more changed file${count === 1 ? '' : 's'} not shown, over the review's budget)`;
}

/** Lines of a new file per chunk, at most; chunks end at a top-level line after a blank one where they can. */
const newFileChunkLines = 40;

function newFilePart(path: string, content: string): ChangePart {
  const lines = splitLines(content);
  const hunks: Hunk[] = [];
  let start = 0;
  while (start < lines.length) {
    let end = Math.min(lines.length, start + newFileChunkLines);
    // End before a top-level definition that follows a blank line, when one is in the chunk's second half.
    for (let index = end - 1; index > start + newFileChunkLines / 2 && end < lines.length; index -= 1) {
      if ((lines[index - 1] ?? '').trim() === '' && /^\S/.test(lines[index] ?? '')) {
        end = index;
        break;
      }
    }
    hunks.push({ text: lines.slice(start, end).map((line, offset) => `+${numbered(start + offset + 1)}${line}`).join('\n'), newStart: start + 1, newEnd: end });
    start = end;
  }
  return { path, header: `+++ b/${path} (new file, ${lines.length} line${lines.length === 1 ? '' : 's'})`, hunks };
}

function diffPart(path: string, old: string, content: string): ChangePart {
  const patch = structuredPatch(`a/${path}`, `b/${path}`, old, content, undefined, undefined, { context: contextLines });
  const hunks = patch.hunks.map((hunk): Hunk => {
    const out = [`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`];
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
    return { text: out.join('\n'), newStart: hunk.newStart, newEnd: Math.max(hunk.newStart, newLine - 1) };
  });
  return { path, header: [`--- a/${path}`, `+++ b/${path}`].join('\n'), hunks };
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
