// Prints the last commit of the repository with execFile (no shell).
import { execFile } from 'node:child_process';

export function lastCommit(cwd = '.'): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', ['log', '-1', '--format=%H %s'], { cwd }, (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
  });
}
