import { beforeAll, describe, expect, it } from '@jest/globals';
import { createDefinitionExtractor, type DefinitionExtractor } from './definitions';
import { buildRepoMap, rankFiles, termMentionLines, type RepoFile } from './repo-map';
import { loadSyntaxParsers } from './syntax-parsers';
import { countTokens } from '@ratchet/agent';

let extractor: DefinitionExtractor;
beforeAll(async () => {
  extractor = createDefinitionExtractor(await loadSyntaxParsers());
});

const paths = (files: readonly { path: string }[]) => files.map((file) => file.path);

/** A deterministic repository of `count` small Python, TypeScript and other files, some of them tests. */
function generatedRepo(count: number): RepoFile[] {
  return Array.from({ length: count }, (_, index) => {
    const directory = `pkg${index % 17}/sub${index % 5}`;
    switch (index % 4) {
      case 0:
        return { path: `${directory}/module_${index}.py`, content: `import os\n\nLIMIT_${index} = ${index}\n\nclass Widget${index}:\n    def render(self, width: int) -> str:\n        return str(width)\n\n    def close(self):\n        pass\n\ndef helper_${index}(a, b=2):\n    return a + b\n` };
      case 1:
        return { path: `${directory}/service-${index}.ts`, content: `export interface Options${index} {\n  readonly name: string;\n}\nexport const create${index} = (options: Options${index}): string => options.name;\n` };
      case 2:
        return { path: `tests/${directory}/test_module_${index - 2}.py`, content: `from pkg${(index - 2) % 17}.sub${(index - 2) % 5}.module_${index - 2} import helper_${index - 2}\n\ndef test_helper():\n    assert helper_${index - 2}(1) == 3\n` };
      default:
        return { path: `docs/${directory}/notes-${index}.md`, content: `# Notes ${index}\n\nSome prose.\n` };
    }
  });
}

describe('rankFiles', () => {
  const repo: RepoFile[] = [
    { path: 'README.md', content: '# App\nRun parse_config on startup.\n' },
    { path: 'src/app/main.py', content: 'from app.config_loader import parse_config\n\ndef main():\n    return parse_config("app.ini")\n' },
    { path: 'src/app/config_loader.py', content: 'import configparser\n\ndef parse_config(path):\n    return configparser.ConfigParser().read(path)\n' },
    { path: 'src/app/ops.py', content: 'def add(a, b):\n    return a + b\n\ndef subtract(a, b):\n    return a - b\n' },
    { path: 'src/app/util.py', content: 'def clamp(value, low, high):\n    return max(low, min(value, high))\n' },
    { path: 'tests/test_ops.py', content: 'from app.ops import add\n\ndef test_add_negative():\n    assert add(-1, -1) == -2\n' },
    { path: 'tests/test_util.py', content: 'from app.util import clamp\n\ndef test_clamp():\n    assert clamp(5, 0, 3) == 3\n' },
    { path: 'web/cart.ts', content: 'export function total(items: number[]): number {\n  return items.reduce((sum, item) => sum + item, 0);\n}\n' },
    { path: 'web/__tests__/cart.spec.ts', content: "import { total } from '../cart';\n\nit('totals', () => expect(total([1, 2])).toBe(3));\n" },
  ];

  it('reads a log with a very long word (progress marks, a blob) in linear time, and takes no such word for a term', () => {
    const started = Date.now();
    const ranked = rankFiles(repo, 'Fix parse_config', { errorText: `${'F'.repeat(50_000)}\n${'x'.repeat(5_000)}/y\nsrc/app/config_loader.py:3: KeyError` });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(ranked[0]?.path).toBe('src/app/config_loader.py');
    expect(ranked[0]?.reasons[0]).toBe('mentioned +100');
  });

  it('puts the file defining a function named in the goal first', () => {
    const ranked = rankFiles(repo, 'Fix parse_config so that it accepts a file with empty sections');
    expect(ranked[0]?.path).toBe('src/app/config_loader.py');
    expect(ranked[0]?.reasons).toContain('defines parse_config +30');
  });

  it('ranks the module a failing test imports right after the test', () => {
    const ranked = paths(rankFiles(repo, 'Make the tests pass', { failingTests: ['tests/test_ops.py::test_add_negative'] }));
    expect(ranked.slice(0, 2)).toEqual(['tests/test_ops.py', 'src/app/ops.py']);
  });

  it('follows a failing test given as pytest module::name and a relative JS import', () => {
    expect(paths(rankFiles(repo, 'Make the tests pass', { failingTests: ['tests.test_ops::test_add_negative'] })).slice(0, 2)).toEqual(['tests/test_ops.py', 'src/app/ops.py']);
    expect(paths(rankFiles(repo, 'Make the tests pass', { failingTests: ['web/__tests__/cart.spec.ts > totals'] })).slice(0, 2)).toEqual(['web/__tests__/cart.spec.ts', 'web/cart.ts']);
  });

  it('finds a failing test file from the test function name alone', () => {
    expect(paths(rankFiles(repo, 'Make the tests pass', { failingTests: ['test_clamp'] })).slice(0, 2)).toEqual(['tests/test_util.py', 'src/app/util.py']);
  });

  it('ranks files named in a traceback by absolute path, and mentioned paths', () => {
    const errorText = 'Traceback (most recent call last):\n  File "/workspace/src/app/util.py", line 2, in clamp\nTypeError: bad operand';
    expect(rankFiles(repo, 'Fix the crash', { errorText })[0]?.path).toBe('src/app/util.py');
    expect(rankFiles(repo, 'Update the docs', { mentionedPaths: ['README.md'] })[0]?.path).toBe('README.md');
  });

  it('lifts the tests of a relevant module', () => {
    const ranked = rankFiles(repo, 'Rename clamp to bound');
    expect(paths(ranked).slice(0, 2)).toEqual(['src/app/util.py', 'tests/test_util.py']);
    expect(ranked[1]?.reasons).toEqual(['test of a relevant file +15']);
  });

  it('breaks ties by depth, then size, and is the same for any input order', () => {
    const ranked = paths(rankFiles(repo, 'nothing in particular'));
    expect(ranked[0]).toBe('README.md');
    const reversed = paths(rankFiles([...repo].reverse(), 'nothing in particular'));
    expect(reversed).toEqual(ranked);
  });
});

describe('buildRepoMap', () => {
  const files: RepoFile[] = [
    { path: 'calc/ops.py', content: 'class Calculator:\n    def add(self, a, b):\n        return a + b\n\n    def sub(self, a, b):\n        return a - b\n\ndef parse(text):\n    return text.split()\n' },
    { path: 'README.md', content: '# Calc\n' },
    { path: 'calc/cli.py', content: 'import sys\n' },
  ];

  it('outlines the most relevant files and lists the rest by path', () => {
    const map = buildRepoMap({ files, goal: 'Calculator.add overflows', budgetTokens: 1000, extractor });
    expect(map.text).toBe(['calc/ops.py:', '  1: class Calculator [add, sub]', '  8: def parse(text)', 'README.md:', 'calc/cli.py:'].join('\n'));
    expect(map.tokens).toBe(countTokens(map.text));
    expect(map).toMatchObject({ includedFiles: ['calc/ops.py', 'README.md', 'calc/cli.py'], outlinedFiles: ['calc/ops.py', 'README.md', 'calc/cli.py'], omittedFiles: [] });
  });

  it("takes the rarest terms' mentions first, not the package name of every import", () => {
    // As sqlparse's lexer: the package named in every header line, the float rule once, far down.
    const content = [...Array.from({ length: 20 }, (_, index) => `from sqlparse import tokens  # part ${index}`), ...Array.from({ length: 30 }, (_, index) => `RULE_${index} = ${index}`), "(r'-?\\.\\d+', tokens.Number.Float),"].join('\n');
    expect(termMentionLines(content, ['sqlparse', 'Float'], 4)).toEqual([1, 2, 3, 51]);
    expect(termMentionLines(content, ['sqlparse'], 2)).toEqual([1, 2]);
  });

  it('names a minified bundle without outlining its one-letter definitions', () => {
    const bundle = Array.from({ length: 40 }, (_, index) => `function f${index}(e,t){return e+t*${index}}var v${index}=f${index}(1,2);`).join('');
    const map = buildRepoMap({ files: [...files, { path: 'dist/assets/index-Cq4y9.js', content: `${bundle}\n${bundle}\n` }], goal: 'Calculator.add overflows', budgetTokens: 1000, extractor });
    expect(map.text).toContain('dist/assets/index-Cq4y9.js:\n  (minified: not outlined)');
    expect(map.text).not.toMatch(/: function f\d+/);
    expect(map.text).toContain('  1: class Calculator [add, sub]');
  });

  it('cuts the first outline that does not fit, lists paths while they fit, then counts the rest', () => {
    const many = [...files, ...Array.from({ length: 30 }, (_, index) => ({ path: `extra/file_${String(index).padStart(2, '0')}.txt`, content: 'x' }))];
    const map = buildRepoMap({ files: many, goal: 'Calculator.add overflows', budgetTokens: 40, extractor });
    expect(map.tokens).toBeLessThanOrEqual(40);
    expect(map.text.split('\n')[0]).toBe('calc/ops.py:');
    expect(map.text).toMatch(/\n\.\.\. and \d+ more files \(use list_files \/ search\)$/);
    const omitted = Number(/and (\d+) more files/.exec(map.text)?.[1]);
    expect(omitted).toBe(map.omittedFiles.length);
    expect(map.includedFiles.length + map.omittedFiles.length).toBe(many.length);
  });

  it('gives only the closing line, or nothing, for a budget smaller than one line', () => {
    const closingOnly = buildRepoMap({ files, goal: 'x', budgetTokens: countTokens('... and 3 more files (use list_files / search)'), extractor });
    expect(closingOnly.text).toBe('... and 3 more files (use list_files / search)');
    expect(buildRepoMap({ files, goal: 'x', budgetTokens: 3, extractor })).toEqual({ text: '', tokens: 0, includedFiles: [], outlinedFiles: [], omittedFiles: ['README.md', 'calc/cli.py', 'calc/ops.py'] });
    expect(buildRepoMap({ files: [], goal: 'x', budgetTokens: 0, extractor }).text).toBe('');
  });

  it('never exceeds the budget, for repositories of 10 to 10,000 files', () => {
    for (const count of [10, 100, 1_000, 10_000]) {
      const repo = generatedRepo(count);
      for (const budgetTokens of [0, 1, 5, 12, 13, 40, 200, 1_000, 4_000, 16_000]) {
        const map = buildRepoMap({ files: repo, goal: `Fix helper_${count - 4} and Widget7.render`, focus: { failingTests: ['tests/pkg1/sub1/test_module_4.py::test_helper'] }, budgetTokens, extractor });
        expect({ count, budgetTokens, over: map.tokens > budgetTokens }).toEqual({ count, budgetTokens, over: false });
        expect(map.tokens).toBe(countTokens(map.text));
        expect(map.includedFiles.length + map.omittedFiles.length).toBe(count);
        if (map.omittedFiles.length > 0 && map.text !== '') expect(map.text.endsWith(`... and ${map.omittedFiles.length} more files (use list_files / search)`)).toBe(true);
      }
    }
  });

  it('builds a map of 10,000 files quickly, outlining only what it shows', () => {
    const repo = generatedRepo(10_000);
    let outlined = 0;
    const counting: DefinitionExtractor = { outline: (path, content) => ((outlined += 1), extractor.outline(path, content)) };
    const started = performance.now();
    const map = buildRepoMap({ files: repo, goal: 'Widget120.render draws outside the box', budgetTokens: 8_000, extractor: counting });
    const elapsed = performance.now() - started;
    expect(map.text.startsWith('pkg1/sub0/module_120.py:')).toBe(true);
    expect(outlined).toBe(map.outlinedFiles.length + (map.outlinedFiles.length < map.includedFiles.length ? 1 : 0));
    // Generous for a loaded CI machine; the bench measures the real figure.
    expect(elapsed).toBeLessThan(5_000);
  });
});
