/** How much of a client's text an error message quotes by default, in characters. */
export const DEFAULT_QUOTE_CHARS = 100;

/**
 * Client-supplied text as an error message may quote it: JSON-quoted (so
 * control characters and quotes are escaped and the reader sees where it
 * ends) and cut after `max` characters with "…(N more characters)", so a
 * megabyte of input is never echoed back whole.
 *
 * @param max characters kept before the cut; default DEFAULT_QUOTE_CHARS (100).
 */
export function quoted(text: string, max: number = DEFAULT_QUOTE_CHARS): string {
  const limit = Math.max(0, Math.floor(max));
  if (text.length <= limit) return JSON.stringify(text);
  // Do not split a surrogate pair: JSON.stringify would show half of it as \udXXX.
  const end = limit > 0 && /[\ud800-\udbff]/.test(text.charAt(limit - 1)) ? limit - 1 : limit;
  return `${JSON.stringify(text.slice(0, end))}…(${text.length - end} more characters)`;
}
