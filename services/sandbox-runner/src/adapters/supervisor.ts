import { readFileSync } from 'node:fs';
import path from 'node:path';

let cachedSource: string | undefined;

/** The supervisor's source (supervisor/supervisor.py), passed to `python3 -c` so no image needs it installed. */
export function supervisorSource(): string {
  // Two levels up from src/adapters and from dist/adapters alike.
  cachedSource ??= readFileSync(path.join(__dirname, '..', '..', 'supervisor', 'supervisor.py'), 'utf8');
  return cachedSource;
}

/**
 * argv that starts the supervisor inside a sandbox (`-I -S`: no user site,
 * no environment variables read, no site-packages, a fast start).
 * With `idleSeconds` it exits when no job arrives in time.
 */
export function supervisorArgv(idleSeconds?: number): string[] {
  return ['python3', '-I', '-S', '-c', supervisorSource(), ...(idleSeconds === undefined ? [] : ['--idle-seconds', String(idleSeconds)])];
}
