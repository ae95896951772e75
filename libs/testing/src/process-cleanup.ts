import { rmSync } from 'node:fs';
import { runInThisContext } from 'node:vm';

interface CleanupRegistry {
  readonly pids: Set<number>;
  readonly directories: Set<string>;
}

const registryKey = Symbol.for('@ratchet/testing/cleanup-registry');

type HostProcess = NodeJS.Process & { [registryKey]?: CleanupRegistry };

/**
 * Jest runs each spec file in a sandbox whose `process` is a copy: its 'exit'
 * listeners never fire. The vm module belongs to the host realm, so evaluating
 * `process` there yields the real one (outside Jest it is the same object).
 * The registry hangs off the real process so that every spec file's copy of
 * this module shares one registry and one listener.
 */
function registry(): CleanupRegistry {
  const host = runInThisContext('process') as HostProcess;
  let existing = host[registryKey];
  if (existing === undefined) {
    const created: CleanupRegistry = { pids: new Set(), directories: new Set() };
    host[registryKey] = created;
    host.on('exit', () => cleanUp(created));
    existing = created;
  }
  return existing;
}

function cleanUp(entries: CleanupRegistry): void {
  for (const pid of entries.pids) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL'); // the process group first, children included
      } catch {
        // Already gone.
      }
    }
  }
  for (const directory of entries.directories) rmSync(directory, { recursive: true, force: true });
}

/** Kills `pid` with SIGKILL if the test process exits first. Returns the undo. */
export function killOnExit(pid: number): () => void {
  const { pids } = registry();
  pids.add(pid);
  return () => pids.delete(pid);
}

/** Removes `directory` if the test process exits first. Returns the undo. */
export function removeOnExit(directory: string): () => void {
  const { directories } = registry();
  directories.add(directory);
  return () => directories.delete(directory);
}
