// Adds the tool to the user's PATH by editing their shell profile.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function addToPath(directory: string): void {
  fs.appendFileSync(path.join(os.homedir(), '.bashrc'), `\nexport PATH="${directory}:$PATH"\n`);
}
