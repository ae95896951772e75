import { describe, expect, it } from '@jest/globals';
import { countTokens, fitsInTokens, truncateStartToTokens, truncateToTokens } from './tokens';

describe('countTokens', () => {
  it('counts o200k_base tokens', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('def add(a, b):\n    return a + b\n')).toBeGreaterThan(5);
  });

  it('counts special-token markers as plain text instead of throwing', () => {
    expect(countTokens('a <|endoftext|> b')).toBeGreaterThan(3);
  });

  it('counts a very long run without whitespace in linear time, close to the exact count', () => {
    const started = Date.now();
    const long = countTokens(`pytest -q\n${'F'.repeat(200_000)}\n1 failed`);
    expect(Date.now() - started).toBeLessThan(2_000);
    // 2,048 Fs are 256 tokens; the pieces add at most one each.
    expect(long).toBeGreaterThanOrEqual(25_000);
    expect(long).toBeLessThanOrEqual(25_000 + 100 + 10);
    expect(countTokens('F'.repeat(2_048))).toBe(256);
    const cut = truncateStartToTokens(`${'F'.repeat(100_000)}\nthe end`, 50);
    expect(cut.endsWith('\nthe end')).toBe(true);
    expect(countTokens(cut)).toBeLessThanOrEqual(50);
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});

describe('fitsInTokens', () => {
  // ASCII words (about four bytes a token), CJK and emoji (three and four bytes a character, some a token each), single bytes, a long run cut in pieces.
  const texts = ['plain ascii text, with some words in it. '.repeat(30), '世界和平 😀 é ꙮ '.repeat(40), 'x'.repeat(3000), '\u0000\u0001\u007f'.repeat(200), `${'F'.repeat(5000)} end`];

  it.each(texts.map((text, index) => [index, text] as const))('answers as the exact count does for text %i, at every limit around it', (_index, text) => {
    const tokens = countTokens(text);
    const bytes = Buffer.byteLength(text, 'utf8');
    expect(tokens).toBeLessThanOrEqual(bytes);
    for (const max of [0, tokens - 1, tokens, tokens + 1, Math.floor((tokens + bytes) / 2), bytes - 1, bytes, bytes + 1]) {
      expect(fitsInTokens(text, max)).toBe(tokens <= max);
    }
  });
});

describe('truncateToTokens', () => {
  const samples = ['plain ascii text, with some words in it. '.repeat(50), '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 世界 😀 é '.repeat(40), 'x'.repeat(5000), 'line\n'.repeat(300)];

  it.each(samples.map((text, index) => [index, text] as const))('cuts sample %i to a prefix within the limit', (_index, text) => {
    for (const max of [0, 1, 2, 3, 7, 50, 199]) {
      const prefix = truncateToTokens(text, max);
      expect(text.startsWith(prefix)).toBe(true);
      expect(countTokens(prefix)).toBeLessThanOrEqual(max);
      if (max >= 3) expect(prefix.length).toBeGreaterThan(0);
      const suffix = truncateStartToTokens(text, max);
      expect(text.endsWith(suffix)).toBe(true);
      expect(countTokens(suffix)).toBeLessThanOrEqual(max);
    }
  });

  it('returns text that fits unchanged', () => {
    expect(truncateToTokens('short', 10)).toBe('short');
    expect(truncateStartToTokens('short', 10)).toBe('short');
  });

  it('never splits a surrogate pair', () => {
    const text = '😀'.repeat(100);
    for (let max = 1; max < 40; max += 1) {
      expect(truncateToTokens(text, max)).toMatch(/^(?:😀)*$/u);
      expect(truncateStartToTokens(text, max)).toMatch(/^(?:😀)*$/u);
    }
  });
});
