import { describe, expect, it } from '@jest/globals';
import { dynamicWord, findStartPaths, globMatch, isPythonName, literalWord, programName, splitArguments, valueOptionsOf, wordAfter } from './command-words';

const words = (...values: string[]) => values.map((value) => literalWord(value));

describe('splitArguments', () => {
  it('expands short clusters, reads --name=value and skips the values of value options', () => {
    const parsed = splitArguments(words('-C', '.', '-rf', '--force', '--target=out', 'push', 'origin'), ['-C']);
    expect([...parsed.flags]).toEqual(['-C', '-rf', '-r', '-f', '--force', '--target']);
    expect(parsed.options).toEqual([
      { name: '-C', value: literalWord('.') },
      { name: '-rf', value: undefined },
      { name: '--force', value: undefined },
      { name: '--target', value: literalWord('out') },
    ]);
    expect(parsed.positionals.map((positional) => [positional.word.value, positional.index])).toEqual([
      ['push', 5],
      ['origin', 6],
    ]);
  });

  it('takes everything after -- and a lone - as positionals, and a dynamic word as a positional', () => {
    const parsed = splitArguments([...words('-', '--', '-rf'), dynamicWord('$FLAGS')], []);
    expect(parsed.positionals.map((positional) => positional.word.text)).toEqual(['-', '-rf', '$FLAGS']);
    expect(parsed.flags.size).toBe(0);
  });
});

describe('program names', () => {
  it('takes the last path segment of a static program', () => {
    expect(programName(literalWord('/usr/bin/rm'))).toBe('rm');
    expect(programName(literalWord('./run.sh'))).toBe('run.sh');
    expect(programName(dynamicWord('$X'))).toBeUndefined();
    expect(programName(undefined)).toBeUndefined();
  });

  it('knows python interpreters by name', () => {
    expect(['python', 'python3', 'python3.12', 'pypy3'].every(isPythonName)).toBe(true);
    expect(['pythonista', 'py', 'ipython'].some(isPythonName)).toBe(false);
  });

  it('matches * as any run of characters', () => {
    expect(globMatch('mkfs.*', 'mkfs.ext4')).toBe(true);
    expect(globMatch('mkfs.*', 'mkfs')).toBe(false);
    expect(globMatch('pip3*', 'pip3')).toBe(true);
    expect(globMatch('*sh', 'bash')).toBe(true);
    expect(globMatch('a*b*c', 'abc')).toBe(true);
    expect(globMatch('a*b*c', 'acb')).toBe(false);
    expect(globMatch('git', 'gitk')).toBe(false);
  });

  it('shares pip value options between pip, pip3 and pip3.12', () => {
    expect(valueOptionsOf('pip3.12')).toContain('-r');
    expect(valueOptionsOf('toString')).toEqual([]);
  });
});

describe('words', () => {
  it('cuts the start off static and dynamic words', () => {
    expect(wordAfter(literalWord('of=/dev/sda'), 3)).toEqual(literalWord('/dev/sda'));
    expect(wordAfter(dynamicWord('of=/dev/$X', 'of=/dev/'), 3)).toEqual(dynamicWord('of=/dev/$X', '/dev/'));
  });

  it('finds the start paths of find', () => {
    expect(findStartPaths(words('-L', 'src', 'lib', '-name', 'x')).map((word) => word.value)).toEqual(['src', 'lib']);
    expect(findStartPaths(words('-name', 'x'))).toEqual([]);
    expect(findStartPaths(words('/', '(', '-name', 'a', ')')).map((word) => word.value)).toEqual(['/']);
  });
});
