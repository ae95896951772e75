import { diffLines } from 'diff';
import type { SourceText } from './analyze';
import type { Finding } from './findings';

/**
 * The 1-based lines of `after` that the change from `before` added or
 * rewrote; lines that only moved (because lines above them were added or
 * removed) are not touched.
 */
export function touchedLines(before: string, after: string): Set<number> {
  const touched = new Set<number>();
  let line = 1;
  for (const part of diffLines(before, after)) {
    const count = part.count ?? 0;
    if (part.added === true) for (let index = 0; index < count; index += 1) touched.add(line + index);
    if (part.removed !== true) line += count;
  }
  return touched;
}

/**
 * Marks the findings the change did not introduce: a finding of `after`
 * (the files as changed) is pre-existing when `before` (the same files as
 * they were; the check of `baseFiles`) has a finding of the same rule, in
 * the same file, on a line with the same text, and the change did not touch
 * its line. Matching is by the line's text, not its number, so findings
 * below an inserted line still match; each finding of `before` matches one
 * of `after` at most. File-level findings (line 0) match by message. A file
 * without a version in `baseFiles` is new: all its findings are the change's.
 */
export function markPreExisting(after: readonly Finding[], before: readonly Finding[], files: readonly SourceText[], baseFiles: readonly SourceText[]): Finding[] {
  const base = new Map(baseFiles.map((file) => [file.path, file.content]));
  const changed = new Map(files.map((file) => [file.path, file.content]));
  const linesOf = memo((content: string) => content.split('\n'));
  const keyOf = (finding: Finding, content: string) =>
    `${finding.path}\0${finding.ruleId}\0${finding.line === 0 ? finding.message : (linesOf(content)[finding.line - 1] ?? '').trim()}`;
  const remaining = new Map<string, number>();
  for (const found of before) {
    const content = base.get(found.path);
    if (content === undefined) continue;
    const key = keyOf(found, content);
    remaining.set(key, (remaining.get(key) ?? 0) + 1);
  }
  const touched = memo((path: string) => touchedLines(base.get(path) ?? '', changed.get(path) ?? ''));
  return after.map((found) => {
    const content = changed.get(found.path);
    if (content === undefined || !base.has(found.path)) return found;
    if (found.line > 0 && touched(found.path).has(found.line)) return found;
    const key = keyOf(found, content);
    const left = remaining.get(key) ?? 0;
    if (left === 0) return found;
    remaining.set(key, left - 1);
    return { ...found, preExisting: true };
  });
}

function memo<K, V>(compute: (key: K) => V): (key: K) => V {
  const cache = new Map<K, V>();
  return (key) => {
    let value = cache.get(key);
    if (value === undefined) {
      value = compute(key);
      cache.set(key, value);
    }
    return value;
  };
}
