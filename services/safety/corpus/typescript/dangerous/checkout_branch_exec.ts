// Switches the working copy to a branch named in a request.
import { exec } from 'node:child_process';

export function checkout(branch: string): Promise<string> {
  return new Promise((resolve, reject) => {
    exec(`git checkout ${branch}`, (error, stdout) => (error ? reject(error) : resolve(stdout)));
  });
}
