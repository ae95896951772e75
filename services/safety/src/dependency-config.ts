import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { envVariableFor } from '@ratchet/config';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { defaultDependencyPolicy } from './domain/dependency-defaults';
import { Ecosystem, isNameProblem, normalizePackageName, parsePackageName } from './domain/dependency-names';
import { DefaultDecision, type DependencyPolicy, type EcosystemPolicy, type SandboxImagePackages } from './domain/dependency-policy';
import { normalizeVersionSpec, versionProblem, versionSpecProblem } from './domain/dependency-versions';

/** The file of the dependency policy, in the config directory. */
export const dependencyConfigFile = 'dependencies.yaml';

const ecosystems = Object.values(Ecosystem);
const knownKeys = {
  top: [...ecosystems, 'images'],
  ecosystem: ['default', 'allow', 'deny', 'provided'],
  allow: ['name', 'version', 'note'],
  deny: ['name', 'reason'],
} as const;

/** A string key; a missing one says what it is for. */
const text = (required: string) => z.string({ error: (issue) => (issue.input === undefined ? `is required: ${required}` : "must be text; quote it in YAML, e.g. '>=2'") });

const oneLine = (required: string) =>
  text(required)
    .trim()
    .min(1, 'must not be empty')
    .refine((line) => !line.includes('\n'), 'must be one line');

function packageNameSchema(ecosystem: Ecosystem) {
  return text('the package name as the registry spells it')
    .trim()
    .min(1, 'must not be empty')
    .superRefine((name, context) => {
      const parsed = parsePackageName(ecosystem, name);
      if (isNameProblem(parsed)) context.addIssue({ code: 'custom', message: parsed.problem });
      else if (parsed.extras !== '') context.addIssue({ code: 'custom', message: `"${name}": write the name without extras` });
    });
}

function ecosystemSchema(ecosystem: Ecosystem) {
  const defaults = defaultDependencyPolicy[ecosystem];
  const name = packageNameSchema(ecosystem);
  const version = text('a version range')
    .trim()
    .min(1, 'must not be empty; leave the key out to allow any version')
    .superRefine((spec, context) => {
      const problem = versionSpecProblem(ecosystem, normalizeVersionSpec(ecosystem, spec));
      if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
    });
  return z
    .strictObject({
      /** For packages neither list names: ask (a person approves), allow or deny. */
      default: z.enum(DefaultDecision).default(defaults.default),
      /** Packages installed without asking, within their version range. */
      allow: z.array(z.strictObject({ name, version: version.optional(), note: oneLine('why it is allowed').optional() })).default(() => structuredClone(defaults.allow) as { name: string; version?: string; note?: string }[]),
      /** Packages never installed; the reason is shown to the user and the model. */
      deny: z.array(z.strictObject({ name, reason: oneLine('one line saying why not and what to use instead') })).default(() => structuredClone(defaults.deny) as { name: string; reason: string }[]),
      /** Packages the sandbox image already has: never installed, always fine. */
      provided: z.array(name).default(() => [...defaults.provided]),
    })
    .superRefine((settings, context) => {
      // A name twice, or both allowed and denied, is a mistake whichever entry was meant.
      const seen = new Map<string, string>();
      const lists = [
        ['allow', settings.allow.map((entry) => entry.name)],
        ['deny', settings.deny.map((entry) => entry.name)],
        ['provided', settings.provided],
      ] as const;
      for (const [list, names] of lists) {
        names.forEach((entryName, index) => {
          const key = normalizePackageName(ecosystem, entryName);
          const where = `${ecosystem}.${list}.${index}`;
          const earlier = seen.get(key);
          if (earlier === undefined) seen.set(key, where);
          else context.addIssue({ code: 'custom', path: list === 'provided' ? [list, index] : [list, index, 'name'], message: `${entryName} is already in ${earlier}; keep one entry` });
        });
      }
    })
    .prefault({});
}

/** An image's packages of one ecosystem: package name -> the exact version installed. */
function imagePackagesSchema(ecosystem: Ecosystem) {
  const version = text('the version the image has').superRefine((installed, context) => {
    const problem = versionProblem(ecosystem, installed);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
  });
  return z
    .record(packageNameSchema(ecosystem), version)
    .superRefine((packages, context) => {
      const seen = new Map<string, string>();
      for (const name of Object.keys(packages)) {
        const key = normalizePackageName(ecosystem, name);
        const earlier = seen.get(key);
        if (earlier === undefined) seen.set(key, name);
        else context.addIssue({ code: 'custom', path: [name], message: `${name} is the same package as ${earlier}; keep one entry` });
      }
    })
    .default({});
}

/** A Docker image reference: [registry/]name[:tag][@digest]. */
const imageReference = text('the image reference').regex(
  /^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$/,
  'is not an image reference; write it as sandbox.image names it, e.g. ratchet-sandbox:3-data',
);

const imagesSchema = z
  .record(imageReference, z.strictObject({ python: imagePackagesSchema(Ecosystem.PYTHON), npm: imagePackagesSchema(Ecosystem.NPM) }).prefault({}))
  .default(() => imagesAsConfig(defaultDependencyPolicy.images));

/**
 * The schema of config/dependencies.yaml: per ecosystem (`python`, `npm`) a
 * `default` (ask | allow | deny), `allow` entries (name, version range,
 * note), `deny` entries (name, reason) and `provided` names; `images`: per
 * sandbox image reference, per ecosystem, package name -> installed
 * version. Every key defaults to the built-in policy.
 */
export const dependencyConfigSchema = z.strictObject({
  python: ecosystemSchema(Ecosystem.PYTHON),
  npm: ecosystemSchema(Ecosystem.NPM),
  images: imagesSchema,
});

type ImagesConfig = Record<string, { python: Record<string, string>; npm: Record<string, string> }>;

function imagesAsConfig(images: readonly SandboxImagePackages[]): ImagesConfig {
  const asRecord = (packages: readonly { name: string; version: string }[]) => Object.fromEntries(packages.map((entry) => [entry.name, entry.version]));
  return Object.fromEntries(images.map((entry) => [entry.image, { python: asRecord(entry.python), npm: asRecord(entry.npm) }]));
}

function imagesOfConfig(images: ImagesConfig): SandboxImagePackages[] {
  const asList = (packages: Record<string, string>) => Object.entries(packages).map(([name, version]) => ({ name, version: version.trim() }));
  return Object.entries(images).map(([image, packages]) => ({ image, python: asList(packages.python), npm: asList(packages.npm) }));
}

/** What `loadDependencyPolicy` is told besides the files. */
export interface DependencyPolicyOptions {
  /**
   * The image the sandbox runs tests in (`sandbox.image` of the tester and
   * the runners); the packages its `images` entry lists count as provided.
   * Default: none, so only `provided` does.
   */
  readonly sandboxImage?: string;
}

type Source = { kind: 'file' } | { kind: 'env'; variable: string; value: string };
type PlainObject = Record<string, unknown>;

const isPlainObject = (value: unknown): value is PlainObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The dependency policy from `<configDir>/dependencies.yaml`, then the
 * variables `RATCHET_DEPENDENCIES_<PYTHON|NPM>_DEFAULT` (ask, allow or deny,
 * any case) and `RATCHET_DEPENDENCIES_<PYTHON|NPM>_PROVIDED` (names,
 * comma-separated); empty variables count as unset. Without the file (and
 * the variables) it is `defaultDependencyPolicy`, which the shipped file
 * writes out; a key the file leaves out keeps its default. Reasons name the
 * file as `<config directory's name>/dependencies.yaml`.
 *
 * `options.sandboxImage` says which image the sandbox runs tests in: the
 * packages its `images` entry lists count as provided.
 *
 * @param configDir default: `RATCHET_CONFIG_DIR`, else `config/` under the
 *   working directory.
 * @throws AppError CONFIG_INVALID listing every problem at once, each with
 *   its key, what is wrong and what to write instead: unknown keys (typos),
 *   YAML syntax errors with their line, names that are no package names,
 *   version ranges or image versions that do not parse, empty or multi-line
 *   reasons, a package listed twice or both allowed and denied, bad
 *   variables.
 */
export function loadDependencyPolicy(configDir?: string, env: Readonly<Record<string, string | undefined>> = process.env, options: DependencyPolicyOptions = {}): DependencyPolicy {
  const sandboxImage = options.sandboxImage?.trim() ?? '';
  const directory = configDir ?? nonEmpty(env['RATCHET_CONFIG_DIR']) ?? path.resolve('config');
  const file = path.join(directory, dependencyConfigFile);
  const source = path.join(path.basename(directory), dependencyConfigFile);
  const sources = new Map<string, Source>();
  let content: PlainObject = {};
  const exists = existsSync(file);
  if (exists) {
    content = readConfigFile(file);
    recordFileSources(content, [], sources);
  }
  let fromEnv = false;
  for (const ecosystem of ecosystems) {
    for (const key of ['default', 'provided'] as const) {
      const variable = envVariableFor(['dependencies', ecosystem, key]);
      const value = nonEmpty(env[variable]);
      if (value === undefined) continue;
      fromEnv = true;
      const section = content[ecosystem] ?? {};
      // A section that is no mapping stays as the file has it, for zod to report.
      if (!isPlainObject(section)) continue;
      section[key] = key === 'default' ? coerceDecision(value) : value.split(',').map((item) => item.trim()).filter((item) => item !== '');
      content = { ...content, [ecosystem]: section };
      sources.set(`${ecosystem}.${key}`, { kind: 'env', variable, value });
    }
  }
  if (!exists && !fromEnv) return sandboxImage === '' ? defaultDependencyPolicy : deepFreeze({ ...defaultDependencyPolicy, sandboxImage });

  const result = dependencyConfigSchema.safeParse(content);
  if (!result.success) {
    const problems = result.error.issues.flatMap((issue) => describeIssue(issue, sources, source));
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      `invalid configuration in ${file} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}\nThe comments in the shipped config/dependencies.yaml say what each key takes.`,
    );
  }
  return deepFreeze({ source, python: result.data.python as EcosystemPolicy, npm: result.data.npm as EcosystemPolicy, images: imagesOfConfig(result.data.images), sandboxImage });
}

function readConfigFile(file: string): PlainObject {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `cannot read ${file}: ${error instanceof Error ? error.message : String(error)}; make it readable or remove it to use the built-in dependency policy`, { cause: error });
  }
  const document = parseDocument(text, { prettyErrors: true });
  if (document.errors.length > 0) {
    const problems = document.errors.map((error) => {
      const line = error.linePos?.[0];
      return `${line ? `line ${line.line}:${line.col}: ` : ''}YAML syntax error: ${error.message.split('\n')[0]}`;
    });
    throw new AppError(ErrorCode.CONFIG_INVALID, `invalid configuration in ${file} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}`);
  }
  const content: unknown = document.toJS();
  if (content === null || content === undefined) return {};
  if (!isPlainObject(content)) throw new AppError(ErrorCode.CONFIG_INVALID, `invalid configuration in ${file}: expected a mapping with the keys ${knownKeys.top.join(', ')} at the top level`);
  return content;
}

function describeIssue(issue: z.core.$ZodIssue, sources: ReadonlyMap<string, Source>, shownFile: string): string[] {
  const issuePath = issue.path.filter((part): part is string | number => typeof part !== 'symbol');
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeysAt(issuePath);
    return issue.keys.map((key) => `${[...issuePath, key].join('.')}: unknown key in ${shownFile}; known keys here: ${known.join(', ')}`);
  }
  const key = issuePath.join('.') || '(root)';
  // A bad key of a mapping (an image reference, a package name): what is wrong with the key itself.
  if (issue.code === 'invalid_key') return issue.issues.map((inner) => `${key}: ${inner.message} (from file ${shownFile})`);
  const source = sourceOf(sources, issuePath);
  if (source?.kind === 'env') {
    const settable = issuePath.slice(0, 2).join('.');
    return [`${key}: ${issue.message} (from env ${source.variable}=${JSON.stringify(source.value)}); set ${source.variable} or ${settable} in ${shownFile}`];
  }
  return [`${key}: ${issue.message} (from file ${shownFile})`];
}

function knownKeysAt(issuePath: readonly (string | number)[]): readonly string[] {
  if (issuePath.length === 0) return knownKeys.top;
  if (issuePath[0] === 'images') return ecosystems;
  if (issuePath.length === 1) return knownKeys.ecosystem;
  return issuePath[1] === 'deny' ? knownKeys.deny : knownKeys.allow;
}

function sourceOf(sources: ReadonlyMap<string, Source>, issuePath: readonly (string | number)[]): Source | undefined {
  for (let length = issuePath.length; length > 0; length--) {
    const source = sources.get(issuePath.slice(0, length).join('.'));
    if (source !== undefined) return source;
  }
  return undefined;
}

function recordFileSources(value: unknown, prefix: string[], sources: Map<string, Source>): void {
  if (!isPlainObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    const keyPath = [...prefix, key];
    sources.set(keyPath.join('.'), { kind: 'file' });
    recordFileSources(child, keyPath, sources);
  }
}

/** The enum value a variable names, whatever its case; left as is when it names none, so zod reports it. */
function coerceDecision(value: string): string {
  const wanted = value.trim().toLowerCase();
  return Object.values(DefaultDecision).find((decision) => decision === wanted) ?? value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
