import { describe, expect, it } from '@jest/globals';
import { decodeEscapes, Grammar, grammarOf } from './syntax';

describe('grammarOf', () => {
  it.each<[string, string, Grammar | undefined]>([
    ['app.py', '', Grammar.PYTHON],
    ['stubs/x.pyi', '', Grammar.PYTHON],
    ['a.js', '', Grammar.JAVASCRIPT],
    ['a.mjs', '', Grammar.JAVASCRIPT],
    ['a.cjs', '', Grammar.JAVASCRIPT],
    ['a.jsx', '', Grammar.JAVASCRIPT],
    ['a.ts', '', Grammar.TYPESCRIPT],
    ['a.d.ts', '', Grammar.TYPESCRIPT],
    ['a.mts', '', Grammar.TYPESCRIPT],
    ['a.cts', '', Grammar.TYPESCRIPT],
    ['a.tsx', '', Grammar.TSX],
    ['SHOUT.PY', '', Grammar.PYTHON],
    ['README.md', 'import os', undefined],
    ['x.constructor', '', undefined],
    ['x.__proto__', '', undefined],
    ['.bashrc', '#!/usr/bin/env python3\n', undefined],
    ['bin/tool', '#!/usr/bin/env python3\nimport os\n', Grammar.PYTHON],
    ['bin/cli', '#!/usr/bin/env node\n', Grammar.JAVASCRIPT],
    ['bin/dev', '#!/usr/bin/env -S npx ts-node\n', Grammar.TYPESCRIPT],
    ['bin/sh', '#!/bin/sh\necho hi\n', undefined],
    ['Makefile', 'all:\n\tpython x.py\n', undefined],
  ])('%s', (path, content, grammar) => {
    expect(grammarOf(path, content)).toBe(grammar);
  });
});

describe('decodeEscapes', () => {
  it('decodes the escapes a path literal may use', () => {
    expect(decodeEscapes('C:\\\\Windows\\\\x')).toBe('C:\\Windows\\x');
    expect(decodeEscapes('\\x2fetc\\u002fpasswd')).toBe('/etc/passwd');
    expect(decodeEscapes('\\u{7e}/x')).toBe('~/x');
    expect(decodeEscapes('a\\nb\\q')).toBe('a\nbq');
  });
});
