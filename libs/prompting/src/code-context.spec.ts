import { beforeAll, describe, expect, it } from '@jest/globals';
import { buildCodeContext, codeContext, lineReferences, type CodeFile } from './code-context';
import { createDefinitionExtractor, type DefinitionExtractor } from '@ratchet/code-intel';
import { formatFiles } from './format';
import { loadSyntaxParsers } from '@ratchet/code-intel';
import { countTokens } from '@ratchet/agent';

let extractor: DefinitionExtractor;
beforeAll(async () => {
  extractor = createDefinitionExtractor(await loadSyntaxParsers());
});

/** A Python module of `count` small report functions (9 lines each, about 80 tokens). */
function module(name: string, count: number): string {
  return Array.from(
    { length: count },
    (_, number) => `def ${name}_${number}(rows, width=${number}):
    """Report ${number} of ${name}."""
    lines = []
    for row in rows:
        text = f"{row.key:<20} {row.amount:>10}"
        lines.append(text[:width])
    return "\\n".join(lines)
`,
  ).join('\n\n');
}

/** A workspace of `count` modules of 20 functions each, in nested packages. */
function workspace(count: number): CodeFile[] {
  return Array.from({ length: count }, (_, index) => ({ path: `app/pkg_${index % 9}/area_${index % 4}/records_${index}.py`, content: module(`report_${index}`, 20) }));
}

/** The 1-based line of the first occurrence of `text` in `content`. */
function lineOf(content: string, text: string): number {
  return content.slice(0, content.indexOf(text)).split('\n').length;
}

describe('buildCodeContext', () => {
  it('shows a handful of small files whole, exactly as formatFiles does, when they fit', () => {
    const files = [
      { path: 'todo.py', content: 'import json\n\ndef load(path):\n    return json.load(open(path))\n' },
      { path: 'tests/test_todo.py', content: 'from todo import load\n\ndef test_load():\n    assert load("x") == []\n' },
    ];
    const context = buildCodeContext({ files, goal: 'a todo list', budgetTokens: 2_000 });
    expect(context.text).toBe(formatFiles(files));
    expect(context.wholeFiles).toEqual(['todo.py', 'tests/test_todo.py']);
    expect(context.tokens).toBe(countTokens(context.text));
    expect(buildCodeContext({ files: [], goal: 'x', budgetTokens: 100 }).text).toBe('(none)');
  });

  it('numbers a whole file that has lines that matter and marks them', () => {
    const files = [{ path: 'calc.py', content: 'def add(a, b):\n    return a - b\n' }];
    const context = buildCodeContext({ files, goal: 'add', focus: { errorText: 'calc.py:2: AssertionError' }, budgetTokens: 1_000 });
    expect(context.text).toBe('--- calc.py (2 lines, numbered; > marks the lines that matter)\n```\n1 | def add(a, b):\n2 >     return a - b\n```');
  });

  it('keeps a workspace of many large files under the budget, with the changed function and its context, and a map of the rest', () => {
    const files = workspace(400);
    const base = module('ledger', 150);
    const content = base.replace('"""Report 75 of ledger."""\n    lines = []', '"""Report 75 of ledger."""\n    lines = ["TOTALS"]');
    const changedLine = lineOf(content, 'lines = ["TOTALS"]');
    files.push({ path: 'app/core/ledger.py', content, base });
    for (const budget of [1_500, 4_000, 12_000]) {
      const context = buildCodeContext({ files, goal: 'ledger_75 must start with a TOTALS line', budgetTokens: budget, extractor });
      expect(context.tokens).toBeLessThanOrEqual(budget);
      expect(countTokens(context.text)).toBe(context.tokens);
      expect(context.excerptedFiles).toContain('app/core/ledger.py');
      // The whole function around the change, numbered, the changed line marked, and what is not shown named.
      expect(context.text).toContain(`${changedLine} >     lines = ["TOTALS"]`);
      expect(context.text).toContain(`${changedLine - 2} | def ledger_75(rows, width=75):`);
      expect(context.text).toContain(`${changedLine + 4} |     return "\\n".join(lines)`);
      expect(context.text).toMatch(/--- app\/core\/ledger\.py \(excerpt: \d+ of 1348 lines; > marks the lines that matter\)/);
      expect(context.text).toContain(`⋮ lines 1-${changedLine - 3} not shown`);
      expect(context.text).toContain('Map of the other files (their definitions, most relevant first):');
      expect(context.text).not.toContain('def ledger_0(');
    }
  });

  it('shows the lines a traceback names, in files too large to show, inside their function', () => {
    const files = workspace(50);
    const big = { path: 'app/reports/big.py', content: module('big', 300) };
    files.push(big);
    const failing = lineOf(big.content, 'def big_212(') + 5;
    const errorText = `Traceback (most recent call last):\n  File "/workspace/app/reports/big.py", line ${failing}, in big_212\n    lines.append(text[:width])\nTypeError: slice indices must be integers`;
    const context = buildCodeContext({ files, goal: 'make the report tests pass', focus: { errorText, failingTests: ['tests/test_big.py::test_big_212'] }, budgetTokens: 3_000, extractor });
    expect(context.tokens).toBeLessThanOrEqual(3_000);
    expect(context.text).toContain(`${failing} >         lines.append(text[:width])`);
    expect(context.text).toContain(`${failing - 5} | def big_212(rows, width=212):`);
    // Never the middle of the file cut around the line: the lines left out are named where they are.
    expect(context.text).toContain(`⋮ lines ${failing + 2}-${big.content.split('\n').length - 1} not shown`);
  });

  it('drops whole regions from the end when they do not fit, names them, and never cuts inside a region but the one left', () => {
    const base = module('many', 200);
    let content = base;
    for (const number of [20, 60, 100, 140, 180]) content = content.replace(`"""Report ${number} of many."""\n    lines = []`, `"""Report ${number} of many."""\n    lines = ["CHANGED ${number}"]`);
    const files = [{ path: 'many.py', content, base }];
    const lines = [20, 60, 100, 140, 180].map((number) => lineOf(content, `lines = ["CHANGED ${number}"]`));
    const context = buildCodeContext({ files, goal: 'headers in every report', budgetTokens: 250, mapShare: 0 });
    expect(context.tokens).toBeLessThanOrEqual(250);
    expect(context.text).toContain(`${lines[0]} >     lines = ["CHANGED 20"]`);
    expect(context.text).not.toContain('CHANGED 180');
    expect(context.text).toContain(`[… over the prompt budget, not shown: lines ${lines[2]! - 2}-${lines[2]! + 1}, ${lines[3]! - 2}-${lines[3]! + 1}, ${lines[4]! - 2}-${lines[4]! + 1} of many.py, around lines that matter]`);

    // A new file whose every line is new is one region: its start is shown, and the rest of it named.
    const added = buildCodeContext({ files: [{ path: 'added.py', content: module('added', 200), base: '' }], goal: 'x', budgetTokens: 600, mapShare: 0 });
    expect(added.tokens).toBeLessThanOrEqual(600);
    expect(added.text).toContain('1 > def added_0(rows, width=0):');
    expect(added.text).toMatch(/\[… over the prompt budget, not shown: lines \d+-1798 of added\.py, around lines that matter\]/);
  });

  it('shows the files most relevant to the goal first, whole when they fit, and the definitions of its terms in the others', () => {
    const files = workspace(300);
    files.push({ path: 'app/billing/invoice.py', content: 'def compute_invoice_total(lines):\n    return sum(line.amount for line in lines)\n' });
    files.push({ path: 'app/billing/discounts.py', content: `${module('discount_rule', 60)}\n\ndef apply_discounts(total, rules):\n    for rule in rules:\n        total = rule(total)\n    return total\n` });
    const context = buildCodeContext({ files, goal: 'compute_invoice_total ignores apply_discounts: apply them', budgetTokens: 2_500, extractor });
    expect(context.tokens).toBeLessThanOrEqual(2_500);
    expect(context.wholeFiles).toEqual(['app/billing/invoice.py']);
    expect(context.text).toContain('--- app/billing/invoice.py\n```\ndef compute_invoice_total(lines):');
    expect(context.excerptedFiles).toEqual(['app/billing/discounts.py']);
    expect(context.text).toMatch(/\d+ \| def apply_discounts\(total, rules\):\n\s*\d+ \| {5}for rule in rules:/);
    expect(context.text.indexOf('app/billing/invoice.py')).toBeLessThan(context.text.indexOf('app/billing/discounts.py'));
  });

  it('shows the tests that use a function the goal names, around the uses, though they define none of its terms', () => {
    const tests = Array.from({ length: 300 }, (_, index) => ({ path: `tests/test_records_${index}.py`, content: module(`test_records_${index}`, 20) }));
    const calling = { path: 'tests/test_billing.py', content: `${module('test_other', 30)}\n\ndef test_discounts():\n    assert compute_invoice_total([]) == 0\n` };
    tests.push(calling);
    const context = buildCodeContext({ files: tests, goal: 'compute_invoice_total ignores discounts', budgetTokens: 1_500, extractor });
    expect(context.tokens).toBeLessThanOrEqual(1_500);
    expect(context.excerptedFiles).toEqual(['tests/test_billing.py']);
    expect(context.text).toMatch(/\d+ \| def test_discounts\(\):\n\s*\d+ \| {5}assert compute_invoice_total\(\[\]\) == 0/);
  });

  it('shows the function that uses a keyword argument the goal names, beside the definition of the function it calls', () => {
    // As in a real report: the goal calls the public function; the bug is in a helper it never names.
    const helper = 'def _format(val, floatfmt):\n    """Format one cell."""\n    try:\n        return format(float(val), floatfmt)\n    except ValueError:\n        return str(val)\n';
    const entry = 'def tabulate(rows, floatfmt="g"):\n    """Rows as a table."""\n    return "\\n".join(_format(row, floatfmt) for row in rows)\n';
    const content = `${module('layout', 40)}\n\n${helper}\n\n${module('border', 40)}\n\n${entry}`;
    const files = [...workspace(50), { path: 'tabulate/__init__.py', content }];
    const context = buildCodeContext({ files, goal: 'tabulate([[Decimal("1.10")]], floatfmt=".2f") loses precision', budgetTokens: 3_000, extractor });
    expect(context.tokens).toBeLessThanOrEqual(3_000);
    expect(context.excerptedFiles).toContain('tabulate/__init__.py');
    expect(context.text).toMatch(/\d+ \| def _format\(val, floatfmt\):\n(\s*\d+ \| .*\n){2}\s*\d+ \| {9}return format\(float\(val\), floatfmt\)/);
    expect(context.text).toMatch(/\d+ \| def tabulate\(rows, floatfmt="g"\):/);
  });

  it('leaves a minified bundle that holds every goal word to the map, and shows the source', () => {
    const bundle = Array.from({ length: 200 }, (_, index) => `function f${index}(rows,width){return compute_invoice_total(rows)+width*${index}}`).join(';');
    const files = [...workspace(20), { path: 'dist/app.min.js', content: `${bundle}\n` }, { path: 'app/billing/invoice.py', content: `${module('line_total', 30)}\n\ndef compute_invoice_total(lines):\n    return sum(line.amount for line in lines)\n` }];
    const context = buildCodeContext({ files, goal: 'compute_invoice_total ignores discounts', budgetTokens: 2_000, extractor });
    expect(context.excerptedFiles).toEqual(['app/billing/invoice.py']);
    expect(context.wholeFiles).not.toContain('dist/app.min.js');
    expect(context.text).toContain('dist/app.min.js:\n  (minified: not outlined)');
  });

  it('shows files through a view: whole while they fit, else the most relevant cut short, and the rest in the map', () => {
    const signatures = (file: CodeFile) => file.content.split('\n').filter((line) => line.startsWith('def ')).join('\n');
    const small = buildCodeContext({ files: workspace(2), goal: 'x', budgetTokens: 5_000, view: signatures });
    expect(small.text).toContain('--- app/pkg_0/area_0/records_0.py\n```\ndef report_0_0(rows, width=0):\ndef report_0_1(rows, width=1):');
    expect(small.text).not.toContain('lines.append');

    const files = workspace(2_000);
    const context = buildCodeContext({ files, goal: 'records_7 needs a new report', focus: { mentionedPaths: ['app/pkg_7/area_3/records_7.py'] }, budgetTokens: 2_000, view: signatures, extractor });
    expect(context.tokens).toBeLessThanOrEqual(2_000);
    expect(context.wholeFiles[0]).toBe('app/pkg_7/area_3/records_7.py');
    expect(context.text).toContain('def report_7_19(rows, width=19):');
    expect(context.text).not.toContain('lines.append');
    expect(context.text).toMatch(/\.\.\. and \d+ more files/);
  });

  it('fits one analysis to many budgets, and estimates a workspace too large to count', () => {
    const files = workspace(3_000);
    const builder = codeContext({ files, goal: 'report_12_3 is wrong', budgetTokens: 0, extractor } as never);
    expect(builder.tokens).toBeGreaterThan(500_000);
    for (const budget of [300, 1_000, 6_000]) expect(builder.fit(budget).tokens).toBeLessThanOrEqual(budget);
    expect(builder.fit(20).text).toBe('(3000 files, not shown: over the prompt budget)');
    expect(builder.fit(5).text).toBe('');
  });
});

describe('lineReferences', () => {
  it('reads Python tracebacks, pytest and node locations, relative or absolute, and maps them to the files', () => {
    const text = [
      'File "/workspace/app/calc.py", line 12, in add',
      'tests/test_calc.py:7: AssertionError',
      '    at total (/work/src/cart.ts:40:13)',
      '    at file:///work/src/cart.ts:41:2',
      'other/calc.py:99: elsewhere',
      'README.md:3: not code',
    ].join('\n');
    const found = lineReferences(text, ['app/calc.py', 'tests/test_calc.py', 'src/cart.ts', 'lib/calc.py']);
    expect(found).toEqual(
      new Map([
        ['app/calc.py', [12]],
        ['tests/test_calc.py', [7]],
        ['src/cart.ts', [40, 41]],
      ]),
    );
  });

  it('takes linear time on a long line without a path', () => {
    const started = Date.now();
    lineReferences(`${'a'.repeat(200_000)}.p ${'b/'.repeat(50_000)}`, ['a.py']);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
