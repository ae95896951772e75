import { configSection, envVariableFor, type DeepReadonly } from '@ratchet/config';
import { z } from 'zod';

/** A gitignore-style pattern; negation (`!`) means nothing in a deny list, so it is refused rather than ignored. */
const denyPattern = z
  .string()
  .trim()
  .min(1)
  .refine((pattern) => !pattern.startsWith('!'), { message: 'a negated pattern (!...) cannot be used here; remove the entry instead' });

/** Files that usually hold credentials. Matched like .gitignore lines, case-insensitively, at any depth. */
export const defaultSecretPatterns: readonly string[] = [
  '.env',
  '.env.*',
  '*.pem',
  '*.key',
  'id_rsa*',
  'id_ed25519*',
  '*.p12',
  '*.pfx',
  'credentials*.json',
  '.npmrc',
  '.pypirc',
  '.netrc',
  '*.keystore',
  'secrets.*',
];

/**
 * The `workspace` section of config/cli.yaml: what `ratchet run --workspace DIR`
 * sends of DIR. Every key has an environment variable named after its path
 * (`workspace.maxFiles` -> RATCHET_WORKSPACE_MAX_FILES; lists comma-separated).
 */
export const workspaceConfigSection = configSection({
  /** Most files sent, after ignore rules and the secret deny list. Default 20000. */
  maxFiles: z.number().int().min(1).default(20_000),
  /** Most bytes sent in total. Default 50 MB. */
  maxBytes: z.number().int().min(1).default(50 * 1024 * 1024),
  /** Largest text file sent, bytes; a larger one is left out and reported. Default 1 MB. */
  maxFileBytes: z.number().int().min(1).default(1024 * 1024),
  /** Gitignore-style patterns never sent, at any depth, whatever .gitignore says. `.git` is skipped even when absent here. */
  alwaysSkip: z.array(denyPattern).default(['.git', 'node_modules']),
  /** Gitignore-style patterns of credential files: never sent, and named in `skipped`. A list here replaces the default one. */
  secretPatterns: z.array(denyPattern).default([...defaultSecretPatterns]),
});

/** The parsed `workspace` section. */
export type WorkspaceSettings = DeepReadonly<z.infer<typeof workspaceConfigSection>>;

/** The defaults of the `workspace` section, as an empty config yields them. */
export const defaultWorkspaceSettings: WorkspaceSettings = Object.freeze(workspaceConfigSection.parse(undefined));

/** A `workspace` key, for error messages that tell the user how to change it. */
export type WorkspaceSettingKey = keyof WorkspaceSettings;

/**
 * How to change a `workspace` key, for error messages: the config key and the
 * environment variable, e.g. "workspace.maxFiles in config/cli.yaml or
 * RATCHET_WORKSPACE_MAX_FILES".
 */
export function howToSet(key: WorkspaceSettingKey): string {
  return `workspace.${key} in config/cli.yaml or ${envVariableFor(['workspace', key])}`;
}
