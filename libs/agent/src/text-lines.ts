// Helpers for showing text to a model: numbered lines of a file, and text
// cut to a size with a note saying what was left out.

/** `content` with line numbers, lines `start`..`end` (1-based, inclusive), at most `maxLines` of them. */
export function numberLines(content: string, start = 1, end?: number, maxLines = 400): { text: string; shown: [number, number]; total: number } {
  const lines = content.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const total = lines.length;
  const first = Math.min(Math.max(1, start), Math.max(1, total));
  const last = Math.min(end ?? total, total, first + maxLines - 1);
  const width = String(last).length;
  const text = lines
    .slice(first - 1, last)
    .map((line, index) => `${String(first + index).padStart(width)}| ${line}`)
    .join('\n');
  return { text, shown: [first, last], total };
}

/** Text cut to `maxChars`, keeping its head and tail (errors are often at the end), saying what was left out. */
export function capText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const half = Math.floor((maxChars - 60) / 2);
  return `${text.slice(0, half)}\n[... ${text.length - 2 * half} characters left out ...]\n${text.slice(-half)}`;
}

