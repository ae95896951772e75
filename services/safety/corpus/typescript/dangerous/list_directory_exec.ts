// Prints a long listing of the working directory through the shell.
import { execSync } from 'node:child_process';

export function listing(): string {
  return execSync('ls -la', { encoding: 'utf8' });
}
