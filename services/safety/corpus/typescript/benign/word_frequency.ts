// Counts word frequencies with a plain object keyed by word.
export function frequencies(text: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const word of text.toLowerCase().match(/[a-z']+/g) ?? []) counts[word] = (counts[word] ?? 0) + 1;
  return counts;
}
