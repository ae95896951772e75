/** Longest signature kept; longer ones are cut, since only the head identifies a failure. */
const maxSignatureLength = 240;

// Order matters: paths and ids are replaced before bare numbers, so a path's
// digits do not turn into `<n>` fragments.
const volatileParts: readonly (readonly [RegExp, string])[] = [
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>'],
  [/\b0x[0-9a-f]+\b/gi, '<hex>'],
  // Absolute paths and relative paths with a directory part; a bare file name stays.
  [/(?:[A-Za-z]:)?(?:\/[\w.@+-]+){2,}\/?/g, '<path>'],
  [/\b(?:line|ln) \d+/gi, 'line <n>'],
  // Quoted values: identifiers and literals that differ from run to run.
  [/'[^'\n]{0,200}'/g, "'<v>'"],
  [/"[^"\n]{0,200}"/g, '"<v>"'],
  [/`[^`\n]{0,200}`/g, '`<v>`'],
  [/\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b/gi, '<n>'],
];

/**
 * A stable signature of an error: its type and its message with volatile
 * parts (quoted names and values, numbers, paths, addresses, ids) replaced by
 * placeholders and whitespace collapsed, so the same mistake in two runs or
 * two tasks gets the same signature. `errorType` may be empty; the result is
 * at most 240 characters and empty only when both inputs are blank.
 */
export function errorSignature(errorType: string, message: string): string {
  let normalized = message.split('\n').find((line) => line.trim() !== '') ?? '';
  for (const [pattern, placeholder] of volatileParts) normalized = normalized.replace(pattern, placeholder);
  normalized = normalized.replace(/\s+/g, ' ').trim();
  const type = errorType.trim();
  const signature = type === '' ? normalized : normalized === '' ? type : `${type}: ${normalized}`;
  return signature.length > maxSignatureLength ? signature.slice(0, maxSignatureLength) : signature;
}

/**
 * Splits a test failure message such as `AssertionError: expected 3` or
 * `E   TypeError: x is not a function` into its error type and message; the
 * type is empty when the message names none.
 */
export function splitErrorMessage(text: string): { readonly errorType: string; readonly message: string } {
  const firstLine = text.split('\n').find((line) => line.trim() !== '')?.trim() ?? '';
  const match = /^(?:E\s+)?((?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:Error|Exception|Failure|Exit|Interrupt))\b:?\s*(.*)$/.exec(firstLine);
  if (match === null) return { errorType: '', message: firstLine };
  return { errorType: match[1] ?? '', message: match[2] ?? '' };
}
