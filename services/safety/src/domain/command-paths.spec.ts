import { describe, expect, it } from '@jest/globals';
import { classifyPath, directoryOf, PathClass, type Places } from './command-paths';
import { dynamicWord, literalWord } from './command-words';

const places: Places = { workDirectory: '/work', scratchDirectories: ['/tmp/'] };

describe('classifyPath', () => {
  it.each<[string, string | undefined, PathClass]>([
    ['/', '/work', PathClass.ROOT],
    ['/*', '/work', PathClass.ROOT],
    ['/tmp/../', '/work', PathClass.ROOT],
    ['..', '/work', PathClass.ROOT],
    ['*', '/', PathClass.ROOT],
    ['.', '/work', PathClass.WORKSPACE_ROOT],
    ['./', '/work', PathClass.WORKSPACE_ROOT],
    ['*', '/work', PathClass.WORKSPACE_ROOT],
    ['.*', '/work', PathClass.WORKSPACE_ROOT],
    ['./*', '/work', PathClass.WORKSPACE_ROOT],
    ['..', '/work/src', PathClass.WORKSPACE_ROOT],
    ['/work/', '/', PathClass.WORKSPACE_ROOT],
    ['*.py', '/work', PathClass.WORKSPACE],
    ['src/a.py', '/work', PathClass.WORKSPACE],
    ['src/../b', '/work', PathClass.WORKSPACE],
    ['/work/src', '/', PathClass.WORKSPACE],
    ['/tmp', '/work', PathClass.SCRATCH],
    ['/tmp/x/*', '/work', PathClass.SCRATCH],
    ['/dev/null', '/work', PathClass.SCRATCH],
    ['/dev/fd/2', '/work', PathClass.SCRATCH],
    ['/dev/sda', '/work', PathClass.DEVICE],
    ['/etc/passwd', '/work', PathClass.OUTSIDE],
    ['../x', '/work', PathClass.OUTSIDE],
    ['/workspace', '/work', PathClass.OUTSIDE],
    ['~', '/work', PathClass.OUTSIDE],
    ['~/.bashrc', '/work', PathClass.OUTSIDE],
    ['~other/x', '/work', PathClass.OUTSIDE],
    ['*', '/~', PathClass.OUTSIDE],
    ['src', undefined, PathClass.DYNAMIC],
    ['/etc/x', undefined, PathClass.OUTSIDE],
  ])('%j from %j is %s', (value, directory, expected) => {
    expect(classifyPath(literalWord(value), directory, places)).toBe(expected);
  });

  it.each<[string, string, PathClass]>([
    ['$X', '', PathClass.DYNAMIC],
    ['build/$X', 'build/', PathClass.DYNAMIC],
    ['/work/$X', '/work/', PathClass.DYNAMIC],
    ['/tmp/$X', '/tmp/', PathClass.DYNAMIC],
    ['/etc/$X', '/etc/', PathClass.OUTSIDE],
    ['/$X', '/', PathClass.OUTSIDE],
    ['~$USER', '~', PathClass.OUTSIDE],
    ['/dev/$DISK', '/dev/', PathClass.DEVICE],
  ])('the dynamic word %j is %s', (text, prefix, expected) => {
    expect(classifyPath(dynamicWord(text, prefix), '/work', places)).toBe(expected);
  });
});

describe('directoryOf', () => {
  it('follows the working directory and the cds before the command', () => {
    expect(directoryOf('', '', places)).toBe('/work');
    expect(directoryOf('', 'src', places)).toBe('/work/src');
    expect(directoryOf('..', 'src', places)).toBe('/work');
    expect(directoryOf('/', 'src', places)).toBe('/');
    expect(directoryOf('~/x', '', places)).toBe('/~/x');
    expect(directoryOf(undefined, '', places)).toBeUndefined();
  });
});
