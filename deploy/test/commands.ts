import { spawn } from 'node:child_process';

export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to its end and collects its output; never rejects for a
 * non-zero exit (the caller asserts on `code`). `timeoutMs` kills it (SIGKILL)
 * and reports code null.
 */
export function runCommand(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CommandResult> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `docker compose` when the plugin is there, else docker-compose (v1, Debian's package). */
export async function composeCommand(): Promise<string[]> {
  const plugin = await runCommand('docker', ['compose', 'version']).catch(() => undefined);
  if (plugin?.code === 0) return ['docker', 'compose'];
  const standalone = await runCommand('docker-compose', ['version']).catch(() => undefined);
  if (standalone?.code === 0) return ['docker-compose'];
  throw new Error('neither `docker compose` nor docker-compose is installed: apt-get install -y docker-compose (tools/setup.sh --for-tests does)');
}
