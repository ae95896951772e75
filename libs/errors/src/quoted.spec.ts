import { DEFAULT_QUOTE_CHARS, quoted } from './quoted';

describe('quoted', () => {
  it('quotes short text whole, escaping quotes and control characters', () => {
    expect(quoted('abc')).toBe('"abc"');
    expect(quoted('a"b\nc\u0000')).toBe('"a\\"b\\nc\\u0000"');
    expect(quoted('')).toBe('""');
  });

  it('cuts long text after max characters and says how much is left out', () => {
    expect(quoted('x'.repeat(DEFAULT_QUOTE_CHARS))).toBe(`"${'x'.repeat(100)}"`);
    const megabyte = 'y'.repeat(1_000_000);
    const text = quoted(megabyte);
    expect(text).toBe(`"${'y'.repeat(100)}"…(999900 more characters)`);
    expect(quoted('abcdef', 3)).toBe('"abc"…(3 more characters)');
  });

  it('does not split a surrogate pair at the cut', () => {
    expect(quoted('ab😀cd', 3)).toBe('"ab"…(4 more characters)');
  });
});
