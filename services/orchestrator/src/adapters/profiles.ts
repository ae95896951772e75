import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { configDirectoryOf, LanguageName, languageToProto } from '@ratchet/agent';
import { Language, type ProjectProfile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parseDocument } from 'yaml';
import { z } from 'zod';

/** The directory of the profiles, in the config directory. */
export const profilesDirectory = 'profiles';

/** What a profile's `language` takes: a language, or `any` for a profile that fits every task. */
export const ProfileLanguage = { ...LanguageName, ANY: 'any' } as const;
export type ProfileLanguage = (typeof ProfileLanguage)[keyof typeof ProfileLanguage];

/** Most files a profile's layout lists. */
export const maxLayoutFiles = 100;
/** Longest starting content of one layout file, characters. */
export const maxContentChars = 100_000;
/** Longest `prompt`, characters (what a role's prompt shows of it in full). */
export const maxPromptChars = 4_000;
/** Longest `testStyle`, characters. */
export const maxTestStyleChars = 4_000;

const knownKeys = {
  profile: ['name', 'description', 'language', 'layout', 'testStyle', 'dependencies', 'prompt'],
  layout: ['path', 'purpose', 'content'],
  dependencies: ['name', 'version'],
} as const;

/** A string key; a missing one says what it is for, a number or a boolean says to quote it. */
const text = (required: string) => z.string({ error: (issue) => (issue.input === undefined ? `is required: ${required}` : 'must be text; quote it in YAML') });

const oneLine = (required: string, max: number) =>
  text(required)
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine((line) => !line.includes('\n'), 'must be one line (use >- to fold a long line in YAML)');

const longText = (max: number) => z.string({ error: 'must be text' }).trim().max(max, `must be at most ${max} characters`).default('');

const profileName = text('the name tasks use for the profile, e.g. web_app')
  .trim()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, 'must be 1 to 64 lower-case letters, digits, _ and -, starting with a letter (e.g. web_app)');

const layoutPath = text('the file path relative to the project root, e.g. app.py')
  .trim()
  .max(255, 'must be at most 255 characters')
  .superRefine((filePath, context) => {
    const problem = relativePathProblem(filePath);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
  });

const packageName = text('the package name as the registry spells it')
  .trim()
  .max(214, 'must be at most 214 characters')
  .regex(/^(?:@[a-z0-9][a-z0-9._~-]*\/)?[A-Za-z0-9](?:[A-Za-z0-9._~-]*[A-Za-z0-9])?$/, 'is not a package name; write it as the registry spells it, without a version (put that in version)');

const versionSpec = text('a version range')
  .trim()
  .min(1, 'must not be empty; leave the key out for any version the dependency policy allows')
  .max(256, 'must be at most 256 characters');

/**
 * The schema of one config/profiles/*.yaml file. `name`, `description` and
 * `language` are required; the rest defaults to empty.
 */
export const profileFileSchema = z.strictObject({
    /** What tasks name it by (`-p web_app`); unique among the profiles. */
    name: profileName,
    /** One line saying what it is for. */
    description: oneLine('one line saying what the profile is for', 200),
    /** python, typescript, javascript, or any. */
    language: z.enum(ProfileLanguage, {
      error: (issue) => (issue.input === undefined ? 'is required: python, typescript, javascript or any' : `must be python, typescript, javascript or any, not ${JSON.stringify(issue.input)}`),
    }),
    /** The files to start from: a path, what it is for, and its starting content (absent: the model writes it). */
    layout: z
      .array(
        z.strictObject({
          path: layoutPath,
          purpose: text('what the file is for').trim().min(1, 'must not be empty').max(1_000, 'must be at most 1000 characters'),
          content: z.string({ error: 'must be text (a YAML block: content: |)' }).max(maxContentChars, `must be at most ${maxContentChars} characters`).optional(),
        }),
        { error: 'must be a list of files (- path: ..., purpose: ...)' },
      )
      .max(maxLayoutFiles, `must list at most ${maxLayoutFiles} files`)
      .default([])
      .superRefine((files, context) => {
        const seen = new Map<string, number>();
        files.forEach((file, index) => {
          const earlier = seen.get(file.path);
          if (earlier === undefined) seen.set(file.path, index);
          else context.addIssue({ code: 'custom', path: [index, 'path'], message: `${file.path} is already layout.${earlier}; list each file once` });
        });
      }),
    /** How the tests are written, for the planner and the tester. */
    testStyle: longText(maxTestStyleChars),
    /** The packages the profile may use; the dependency policy still judges each. */
    dependencies: z
      .array(z.strictObject({ name: packageName, version: versionSpec.optional() }), { error: 'must be a list of packages (- name: ...)' })
      .max(50, 'must list at most 50 packages')
      .default([])
      .superRefine((packages, context) => {
        const seen = new Map<string, number>();
        packages.forEach((dependency, index) => {
          const key = dependency.name.toLowerCase().replace(/[-_.]+/g, '-');
          const earlier = seen.get(key);
          if (earlier === undefined) seen.set(key, index);
          else context.addIssue({ code: 'custom', path: [index, 'name'], message: `${dependency.name} is already dependencies.${earlier}; list each package once` });
        });
      }),
    /** Added to the planner's, coder's and tester's prompts. */
    prompt: longText(maxPromptChars),
  });

/** A profile file as validated: what `toProjectProfile` turns into the contract's message. */
export type ProfileConfig = z.infer<typeof profileFileSchema>;

/**
 * The project profiles in `<configDir>/profiles/`: every `*.yaml` (and
 * `*.yml`) file there, one profile each, as the contract's message (the
 * language as the proto enum, `any` as LANGUAGE_UNSPECIFIED), sorted by
 * name. Files whose names start with `.` are skipped (a Kubernetes
 * ConfigMap's `..data`). Without the directory there are no profiles.
 *
 * @param configDir default: `RATCHET_CONFIG_DIR`, else `config/` under the
 *   working directory.
 * @returns a new array of deeply frozen profiles.
 * @throws AppError CONFIG_INVALID listing every problem of every file at
 *   once, each with its file and key: YAML syntax errors with their line,
 *   unknown keys (typos), a missing or invalid name, description or
 *   language, layout paths that are absolute, leave the project or repeat,
 *   bad package names, two files with one profile name, a file or
 *   directory that cannot be read.
 */
export function loadProfiles(configDir: string = configDirectoryOf()): ProjectProfile[] {
  const directory = path.join(configDir, profilesDirectory);
  const shownDirectory = path.join(path.basename(configDir), profilesDirectory);
  const problems: string[] = [];
  const loaded: { profile: ProjectProfile; shown: string }[] = [];
  for (const fileName of profileFiles(directory)) {
    const shown = path.join(shownDirectory, fileName);
    const content = readProfileFile(path.join(directory, fileName), shown, problems);
    if (content === undefined) continue;
    const result = profileFileSchema.safeParse(content);
    if (!result.success) {
      problems.push(...result.error.issues.flatMap((issue) => describeIssue(issue, shown)));
      continue;
    }
    const earlier = loaded.find((entry) => entry.profile.name === result.data.name);
    if (earlier !== undefined) {
      problems.push(`${shown}: name: ${result.data.name} is already the name of the profile in ${earlier.shown}; give each profile a name of its own`);
      continue;
    }
    loaded.push({ profile: toProjectProfile(result.data), shown });
  }
  if (problems.length > 0) {
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      `invalid project profiles in ${directory} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}\nconfig/profiles/README.md says what each key takes.`,
    );
  }
  return loaded.map((entry) => entry.profile).sort((left, right) => left.name.localeCompare(right.name));
}

/** A validated profile file as the contract's message, deeply frozen. */
export function toProjectProfile(file: ProfileConfig): ProjectProfile {
  return deepFreeze({
    name: file.name,
    description: file.description,
    language: file.language === ProfileLanguage.ANY ? Language.LANGUAGE_UNSPECIFIED : languageToProto(file.language),
    layout: file.layout.map((entry) => ({ path: entry.path, purpose: entry.purpose, content: entry.content ?? '' })),
    testStyle: file.testStyle,
    dependencies: file.dependencies.map((dependency) => ({ name: dependency.name, versionSpec: dependency.version ?? '' })),
    prompt: file.prompt,
  });
}

/** The profile files' names in `directory`, sorted; none when it does not exist. */
function profileFiles(directory: string): string[] {
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new AppError(ErrorCode.CONFIG_INVALID, `cannot read the profiles directory ${directory}: ${(error as Error).message}; make it readable, or remove it for no profiles`, { cause: error });
  }
  // statSync follows links: a ConfigMap mounts each file as a link into its ..data directory.
  return names.filter((name) => !name.startsWith('.') && /\.ya?ml$/.test(name) && isFile(path.join(directory, name))).sort();
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function readProfileFile(file: string, shown: string, problems: string[]): unknown {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (error) {
    problems.push(`${shown}: cannot read: ${(error as Error).message}`);
    return undefined;
  }
  const document = parseDocument(content, { prettyErrors: true });
  if (document.errors.length > 0) {
    for (const error of document.errors) {
      const line = error.linePos?.[0];
      problems.push(`${shown}${line ? `:${line.line}:${line.col}` : ''}: YAML syntax error: ${error.message.split('\n')[0] ?? ''}`);
    }
    return undefined;
  }
  const value: unknown = document.toJS();
  if (value === null || value === undefined || typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${shown}: expected a mapping with the keys ${knownKeys.profile.join(', ')}`);
    return undefined;
  }
  return value;
}

function describeIssue(issue: z.core.$ZodIssue, shown: string): string[] {
  const issuePath = issue.path.filter((part): part is string | number => typeof part !== 'symbol');
  if (issue.code === 'unrecognized_keys') {
    const known = issuePath.length === 0 ? knownKeys.profile : issuePath[0] === 'layout' ? knownKeys.layout : knownKeys.dependencies;
    return issue.keys.map((key) => `${shown}: ${[...issuePath, key].join('.')}: unknown key; known keys here: ${known.join(', ')}`);
  }
  return [`${shown}: ${issuePath.join('.') || '(top level)'}: ${issue.message}`];
}

/** Why `filePath` is no path inside the project, or undefined when it is one. */
function relativePathProblem(filePath: string): string | undefined {
  if (filePath === '') return 'must not be empty';
  if (filePath.includes('\0')) return 'must not contain a NUL character';
  if (filePath.includes('\\')) return `${filePath}: use / between directories`;
  if (filePath.startsWith('/')) return `${filePath} is absolute; write it relative to the project root (e.g. app.py, tests/conftest.py)`;
  const segments = filePath.split('/');
  if (segments.some((segment) => segment === '..')) return `${filePath} leaves the project; write it relative to the project root without ..`;
  if (segments.some((segment) => segment === '' || segment === '.')) return `${filePath}: write it without empty or . segments (e.g. tests/conftest.py)`;
  return undefined;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
