import { describe, expect, it } from '@jest/globals';
import { interfaceOf } from './interface';

describe('interfaceOf', () => {
  it('keeps Python signatures and classes, drops bodies and private helpers', () => {
    const [file] = interfaceOf([
      {
        path: 'todo.py',
        content: 'import json\n\n\nclass Store:\n    def add(self, title: str) -> int:\n        return 1 - 2\n\n    def _save(self):\n        pass\n\n\n@cache\ndef load(\n    path: str,\n    default=None,\n):\n    return json.load(open(path))\n',
      },
    ]);
    expect(file?.content).toBe('class Store:\n    def add(self, title: str) -> int:\n@cache\ndef load(\n    path: str,\n    default=None,\n):\n');
    expect(file?.content).not.toContain('return');
  });

  it('keeps module-level constants a test may import, with short values', () => {
    const content = [
      'import sys',
      'EXIT_OK = 0',
      'EXIT_USAGE: int = 2',
      'COLOURS = {',
      '    "red": 1,',
      '}',
      'HELP = """usage:',
      '  cli',
      '"""',
      `LONG = "${'x'.repeat(200)}"`,
      'lower = 1',
      'def main(argv=None):',
      '    if argv == EXIT_OK:',
      '        X = 1',
      '    return EXIT_OK',
      '',
    ].join('\n');
    const [file] = interfaceOf([{ path: 'cli.py', content }]);
    expect(file?.content).toBe(['EXIT_OK = 0', 'EXIT_USAGE: int = 2', 'COLOURS = ...', 'HELP = ...', `LONG = "${'x'.repeat(112)} ...`, 'def main(argv=None):', ''].join('\n'));
  });

  it('keeps exported TypeScript declarations up to their body', () => {
    const [file] = interfaceOf([{ path: 'src/calc.ts', content: "const secret = 1;\nexport function add(a: number, b: number): number {\n  return a - b;\n}\nexport const twice = (n: number): number => {\n  return n * 2;\n};\nexport type Item = { id: number };\n" }]);
    expect(file?.content).toBe('export function add(a: number, b: number): number\nexport const twice = (n: number): number\nexport type Item = { id: number };\n');
  });

  it('says so when a file defines nothing public', () => {
    expect(interfaceOf([{ path: 'main.py', content: 'print(1)\n' }])[0]?.content).toBe('(no public definitions found)\n');
  });
});
