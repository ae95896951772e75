/** Longest title of a success pattern, in characters: one line that says what worked. */
export const maxTitleChars = 100;

/** How similar (cosine) a new success pattern must be to a stored one to be merged into it as evidence. */
export const duplicateScore = 0.92;

/**
 * The one-line title of a success pattern: the first sentence of what
 * worked (never the goal's text), cut at a word boundary.
 */
export function successTitle(summary: string): string {
  const line = summary.replace(/\s+/g, ' ').trim();
  const sentence = /^(.+?[.!?])(\s|$)/.exec(line)?.[1] ?? line;
  if (sentence.length <= maxTitleChars) return `Worked: ${sentence}`;
  const cut = sentence.slice(0, maxTitleChars);
  const space = cut.lastIndexOf(' ');
  return `Worked: ${(space > maxTitleChars / 2 ? cut.slice(0, space) : cut).trimEnd()}...`;
}

/**
 * How many of `limit` slots go to success patterns when both kinds have
 * candidates: a third, at least one, so failure lessons (the reflector's
 * general rules) always keep most of the prompt and a run of successes
 * cannot crowd them out. Unused slots of either kind go to the other.
 */
export function successSlots(limit: number): number {
  return limit <= 1 ? limit : Math.max(1, Math.floor(limit / 3));
}
