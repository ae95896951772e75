import { describe, expect, it } from '@jest/globals';
import { terminalSafe } from './terminal-text';

describe('terminalSafe', () => {
  it('writes every escape sequence a terminal would act on as visible text', () => {
    expect(terminalSafe('title \x1b]0;pwned\x07 set')).toBe('title \\u001b]0;pwned\\u0007 set');
    expect(terminalSafe('line\x1b[2K erased')).toBe('line\\u001b[2K erased');
    expect(terminalSafe('\x1b]8;;http://evil\x07link\x1b]8;;\x07')).toBe('\\u001b]8;;http://evil\\u0007link\\u001b]8;;\\u0007');
    expect(terminalSafe('\x1bP+q544e\x1b\\ dcs')).toBe('\\u001bP+q544e\\u001b\\ dcs');
    // C1 controls (8-bit CSI, OSC, ST) and DEL.
    expect(terminalSafe('\u009b31mred \u009d0;t\u009c \x7f')).toBe('\\u009b31mred \\u009d0;t\\u009c \\u007f');
    // Bidirectional overrides and isolates, which reorder what is shown.
    expect(terminalSafe('invoice\u202eexe.pdf \u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069')).toBe('invoice\\u202eexe.pdf \\u202a\\u202b\\u202c\\u202d \\u2066\\u2067\\u2068\\u2069');
    // Carriage returns, backspaces and bells: a line can be overwritten without any ESC.
    expect(terminalSafe('safe\rrm -rf\b\x07')).toBe('safe\\u000drm -rf\\u0008\\u0007');
  });

  it('keeps new lines, tabs, CRLF as new lines, and everything printable, other scripts and emoji included', () => {
    expect(terminalSafe('a\n\tb\r\nc')).toBe('a\n\tb\nc');
    expect(terminalSafe('café → 東京 ✓ 🚀 \u00a0 \u200e')).toBe('café → 東京 ✓ 🚀 \u00a0 \u200e');
  });

  it('keeps a JSON line valid and equal in value', () => {
    const value = { goal: 'x\x1b[2K\u009b31m\u202e\x07y' };
    const safe = terminalSafe(JSON.stringify(value));
    // eslint-disable-next-line no-control-regex -- matching control characters is the point.
    expect(safe).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(JSON.parse(safe)).toEqual(value);
  });
});
