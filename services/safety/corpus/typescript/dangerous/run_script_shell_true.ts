// Runs a user-defined script with npm-like semantics.
import { spawn } from 'node:child_process';

export function runScript(command: string, cwd: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, { cwd, shell: true, stdio: 'inherit' });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}
