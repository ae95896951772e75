// Keeps intermediate results in /tmp, which is private to the sandbox.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

const SCRATCH = '/tmp/ratchet-scratch';

export function savePartial(name: string, data: unknown): void {
  mkdirSync(SCRATCH, { recursive: true });
  writeFileSync(`${SCRATCH}/${name}.json`, JSON.stringify(data));
  writeFileSync('/tmp/ratchet-last.txt', name);
}

export function loadPartial(name: string): unknown {
  return JSON.parse(readFileSync(`${SCRATCH}/${name}.json`, 'utf8'));
}
