// Reads config.json from the working directory, with defaults.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const DEFAULTS = { port: 3000, logLevel: 'info' } as const;

export function readConfig(path = 'config.json'): typeof DEFAULTS {
  if (!existsSync(path)) return { ...DEFAULTS };
  return { ...DEFAULTS, ...(JSON.parse(readFileSync(path, 'utf8')) as Partial<typeof DEFAULTS>) };
}

export function writeConfig(config: typeof DEFAULTS, path = 'config.json'): void {
  writeFileSync(path, JSON.stringify(config, null, 2));
}
