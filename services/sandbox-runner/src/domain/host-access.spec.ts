import { describe, expect, it } from '@jest/globals';
import { canEnter, directoryDifferences, firstBlocked, octalMode, pathChain, type DirectoryStatus } from './host-access';

const sandboxUser = { uid: 10001, gid: 10001 };
const directory = (path: string, mode: number, uid = 0, gid = 0): DirectoryStatus => ({ path, mode, uid, gid });

describe('host access', () => {
  it('prints permission bits in octal, ignoring the file type', () => {
    expect(octalMode(0o40700)).toBe('0700');
    expect(octalMode(0o41777)).toBe('1777');
  });

  it('lists each difference from the wanted mode and owner', () => {
    expect(directoryDifferences(directory('/run/x', 0o40700), { mode: 0o711, uid: 0, gid: 0 })).toEqual(['mode 0700 -> 0711']);
    expect(directoryDifferences(directory('/run/x', 0o40711, 1000, 1000), { mode: 0o711, uid: 0, gid: 0 })).toEqual(['owner 1000:1000 -> 0:0']);
    expect(directoryDifferences(directory('/run/x', 0o40777, 0, 5), { mode: 0o711, uid: 0, gid: 0 })).toEqual(['mode 0777 -> 0711', 'owner 0:5 -> 0:0']);
    expect(directoryDifferences(directory('/run/x', 0o40711), { mode: 0o711, uid: 0, gid: 0 })).toEqual([]);
  });

  it('lets a user enter by the owner, group or everyone bits, whichever applies to it', () => {
    expect(canEnter(directory('/a', 0o700), sandboxUser)).toBe(false);
    expect(canEnter(directory('/a', 0o711), sandboxUser)).toBe(true);
    expect(canEnter(directory('/a', 0o700, 10001, 10001), sandboxUser)).toBe(true);
    // The owner's bits apply to the owner even when everyone's would let it in.
    expect(canEnter(directory('/a', 0o071, 10001, 0), sandboxUser)).toBe(false);
    expect(canEnter(directory('/a', 0o710, 0, 10001), sandboxUser)).toBe(true);
    expect(canEnter(directory('/a', 0o701, 0, 10001), sandboxUser)).toBe(false);
    expect(canEnter(directory('/a', 0o700), { uid: 0, gid: 0 })).toBe(true);
  });

  it('finds the first directory on the way that blocks the user', () => {
    const chain = [directory('/', 0o755), directory('/run', 0o755), directory('/run/ratchet-sandbox', 0o700), directory('/run/ratchet-sandbox/a', 0o700, 10001, 10001)];
    expect(firstBlocked(chain, sandboxUser)?.path).toBe('/run/ratchet-sandbox');
    expect(firstBlocked([chain[0] as DirectoryStatus, chain[1] as DirectoryStatus, chain[3] as DirectoryStatus], sandboxUser)).toBeUndefined();
  });

  it('walks an absolute path from the root', () => {
    expect(pathChain('/var/lib/ratchet/sandbox-rootfs')).toEqual(['/', '/var', '/var/lib', '/var/lib/ratchet', '/var/lib/ratchet/sandbox-rootfs']);
    expect(pathChain('/')).toEqual(['/']);
    expect(pathChain('/a//b/')).toEqual(['/', '/a', '/a/b']);
  });
});
