import { describe, expect, it } from '@jest/globals';
import { escapesWorkspace, joinPaths } from './workspace-paths';

describe('escapesWorkspace', () => {
  it.each(['/etc/passwd', '/', '~', '~/.bashrc', '~root/x', 'C:\\Windows', 'c:/x', 'D:x', '\\\\server\\share', '\\x', '..', '../x', 'a/../../x', './../x', 'a\\..\\..\\x'])('%s escapes', (path) => {
    expect(escapesWorkspace(path)).toBe(true);
  });

  it.each(['', '.', 'x', 'out/data.json', './out', 'a/../b', 'a/b/../../c', 'a..b', '...', '/dev/null', '/dev/stderr'])('%s stays inside', (path) => {
    expect(escapesWorkspace(path)).toBe(false);
  });
});

describe('joinPaths', () => {
  it('restarts at a rooted part like os.path.join and path.resolve', () => {
    expect(joinPaths(['a', '/etc', 'x'], true)).toBe('/etc/x');
    expect(joinPaths(['~', '.ssh'], true)).toBe('~/.ssh');
    expect(joinPaths(['a/', 'b'], true)).toBe('a/b');
  });

  it('concatenates like path.join', () => {
    expect(joinPaths(['a', '/etc', 'x'], false)).toBe('a/etc/x');
    expect(joinPaths(['/opt', '', 'x'], false)).toBe('/opt/x');
  });
});
