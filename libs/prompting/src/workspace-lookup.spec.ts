import { describe, expect, it } from '@jest/globals';
import { countTokens } from '@ratchet/agent';
import { WorkspaceLookup } from './workspace-lookup';

const files = [
  { path: 'tabulate/__init__.py', content: 'def tabulate(rows, floatfmt="g"):\n    return _format(rows, floatfmt)\n\n\ndef _format(val, floatfmt):\n    return format(float(val), floatfmt)\n' },
  { path: 'test/test_output.py', content: 'from tabulate import tabulate\n\ndef test_decimal():\n    assert tabulate([[1]], floatfmt=".2f")\n' },
  { path: 'README.md', content: '# tabulate\nPretty-print tabular data.\n' },
];

const call = (name: string, args: unknown, id = 'call-1') => ({ id, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });

describe('WorkspaceLookup', () => {
  it('reads a file with line numbers, or the lines asked for, and says what was not shown', async () => {
    const lookup = new WorkspaceLookup(files, { maxCalls: 8, maxTokens: 4000 });
    expect(await lookup.run(call('read_file', { path: 'tabulate/__init__.py' }))).toBe(
      'tabulate/__init__.py (6 lines)\n1| def tabulate(rows, floatfmt="g"):\n2|     return _format(rows, floatfmt)\n3| \n4| \n5| def _format(val, floatfmt):\n6|     return format(float(val), floatfmt)',
    );
    expect(await lookup.run(call('read_file', { path: './tabulate/__init__.py', start_line: 5, end_line: 6 }))).toBe('tabulate/__init__.py lines 5-6 of 6\n5| def _format(val, floatfmt):\n6|     return format(float(val), floatfmt)');
    expect(await lookup.run(call('read_file', { path: 'tabulate/__init__.py', end_line: 2 }))).toContain('[lines 3-6 not shown: read them with start_line]');
    expect(await lookup.run(call('read_file', { path: '__init__.py' }))).toBe('no file __init__.py; did you mean tabulate/__init__.py?');
    expect(lookup.steps.map((step) => [step.number, step.tool, step.failed])).toEqual([
      [1, 'read_file', false],
      [2, 'read_file', false],
      [3, 'read_file', false],
      [4, 'read_file', true],
    ]);
  });

  it('searches every file or one directory for a regular expression, line by line', async () => {
    const lookup = new WorkspaceLookup(files, { maxCalls: 8, maxTokens: 4000 });
    expect(await lookup.run(call('search', { pattern: 'floatfmt\\)$' }))).toBe('tabulate/__init__.py:2: return _format(rows, floatfmt)\ntabulate/__init__.py:6: return format(float(val), floatfmt)');
    expect(await lookup.run(call('search', { pattern: 'floatfmt=', path: 'test' }))).toBe('test/test_output.py:4: assert tabulate([[1]], floatfmt=".2f")');
    expect(await lookup.run(call('search', { pattern: '(?i:PRETTY)' }))).toBe('README.md:2: Pretty-print tabular data.');
    expect(await lookup.run(call('search', { pattern: 'Decimal' }))).toBe('no match for "Decimal"');
    expect(await lookup.run(call('search', { pattern: 'x', path: 'src' }))).toBe('no file is src or under it');
  });

  it('answers what the model got wrong instead of throwing: a bad pattern, bad arguments, an unknown tool', async () => {
    const lookup = new WorkspaceLookup(files, { maxCalls: 8, maxTokens: 4000 });
    expect(await lookup.run(call('search', { pattern: '(' }))).toMatch(/^invalid pattern: /);
    expect(await lookup.run(call('read_file', '{"path": '))).toMatch(/^the arguments of read_file are not valid JSON/);
    expect(await lookup.run(call('read_file', { file: 'README.md' }))).toMatch(/^bad arguments for read_file: /);
    expect(await lookup.run(call('write_file', { path: 'x' }))).toBe('unknown tool "write_file"; the tools are read_file, search');
    expect(lookup.steps.every((step) => step.failed)).toBe(true);
  });

  it('stops a pattern that backtracks without end instead of hanging', async () => {
    const lookup = new WorkspaceLookup([{ path: 'a.txt', content: `${'a'.repeat(40)}!\n` }], { maxCalls: 8, maxTokens: 4000 });
    expect(await lookup.run(call('search', { pattern: '^(a+)+$' }))).toBe('the pattern took over 2 s and was stopped; use a simpler one');
  });

  it('keeps to its calls and its token share: a long result is cut, later calls are told to reply', async () => {
    const long = { path: 'big.py', content: Array.from({ length: 250 }, (_, index) => `value_${index} = compute_something(${index}, "padding words here")`).join('\n') };
    const lookup = new WorkspaceLookup([long, ...files], { maxCalls: 3, maxTokens: 500 });
    const cut = await lookup.run(call('read_file', { path: 'big.py' }));
    expect(cut).toContain("[cut: the lookups' 500-token share of the prompt is used up]");
    expect(countTokens(cut)).toBeLessThanOrEqual(500);
    expect(await lookup.run(call('read_file', { path: 'README.md' }))).toBe('not run: the lookups have used their share of the prompt; reply now');

    const counted = new WorkspaceLookup(files, { maxCalls: 1, maxTokens: 4000 });
    await counted.run(call('read_file', { path: 'README.md' }));
    expect(await counted.run(call('read_file', { path: 'README.md' }))).toBe('not run: the 1 lookups are used up; reply now');
  });
});
