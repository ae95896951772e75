// Archives a project directory with tar through bash.
import { spawnSync } from 'node:child_process';

export function archive(project: string, output: string): number {
  const result = spawnSync('bash', ['-c', `tar czf ${output} ${project}`], { stdio: 'inherit' });
  return result.status ?? 1;
}
