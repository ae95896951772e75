import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parseDocument } from 'yaml';
import type { z } from 'zod';

export interface LoadConfigOptions<S extends z.ZodType> {
  readonly schema: S;
  /** Service name: `<service>.yaml` is merged over `ratchet.yaml` when it exists. */
  readonly service?: string;
  /**
   * Directory of the YAML files. Default: `RATCHET_CONFIG_DIR`, else `config/`
   * under the working directory. A directory named here or in
   * `RATCHET_CONFIG_DIR` must exist; the default one may be absent.
   */
  readonly configDir?: string;
  /**
   * More YAML files, merged in this order after `<service>.yaml`; relative
   * paths are taken from `configDir`. Unlike the implicit files, these must exist.
   */
  readonly files?: readonly string[];
  /** Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export type DeepReadonly<T> = T extends (infer U)[] ? readonly DeepReadonly<U>[] : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

type Source = { kind: 'file'; file: string } | { kind: 'env'; variable: string; value: string };
type PlainObject = Record<string, unknown>;
type KeyPath = readonly (string | number)[];

interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  element?: z.ZodType;
  entries?: Record<string, string | number>;
}

interface Leaf {
  path: string[];
  schema: z.ZodType;
}

const isPlainObject = (value: unknown): value is PlainObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The environment variable that sets a config key: `['bus', 'natsUrl']` ->
 * `RATCHET_BUS_NATS_URL` (camelCase becomes UPPER_SNAKE, levels join with `_`).
 */
export function envVariableFor(keyPath: KeyPath): string {
  return `RATCHET_${keyPath.map((part) => String(part).replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_')}`;
}

/**
 * Parses the configuration once, at start: `ratchet.yaml`, then
 * `<service>.yaml`, then `options.files`, deep-merged in that order, then
 * `RATCHET_*` environment variables named after each key of the schema (see
 * `envVariableFor`). Environment values are coerced to the key's type
 * (numbers, booleans as true/false/1/0/yes/no/on/off, enums case-insensitively,
 * arrays comma-separated); empty ones count as unset, and variables that match
 * no key are ignored. The result is validated by `schema` and deeply frozen.
 *
 * @throws AppError `CONFIG_INVALID` listing every problem at once: for each
 *   bad key its path, what is wrong, where the value came from (file or
 *   variable) and the variable that fixes it; keys in a YAML file that the
 *   schema does not know (typos); YAML syntax errors with file and line; and a
 *   config directory or file that was named explicitly but cannot be read.
 */
export function loadConfig<S extends z.ZodType>(options: LoadConfigOptions<S>): DeepReadonly<z.infer<S>> {
  const env = options.env ?? process.env;
  const problems: string[] = [];
  const sources = new Map<string, Source>();
  /** Unknown keys already reported with their file, so zod's `strict()` does not report them again. */
  const unknownKeys = new Set<string>();

  const dirFromEnv = nonEmpty(env['RATCHET_CONFIG_DIR']);
  const configDir = options.configDir ?? dirFromEnv ?? path.resolve('config');
  const dirIsExplicit = options.configDir !== undefined || dirFromEnv !== undefined;
  if (dirIsExplicit && !isDirectory(configDir)) {
    problems.push(`config directory ${configDir} does not exist${options.configDir === undefined ? ' (from env RATCHET_CONFIG_DIR)' : ''}`);
  }
  // Messages name files relative to the config directory's own name, so they read the same on every machine.
  const shownDir = path.basename(configDir);

  const candidates: { file: string; shown: string; required: boolean }[] = [
    { file: path.join(configDir, 'ratchet.yaml'), shown: path.join(shownDir, 'ratchet.yaml'), required: false },
    ...(options.service ? [{ file: path.join(configDir, `${options.service}.yaml`), shown: path.join(shownDir, `${options.service}.yaml`), required: false }] : []),
    ...(options.files ?? []).map((file) => ({ file: path.resolve(configDir, file), shown: file, required: true })),
  ];

  let merged: PlainObject = {};
  let filesUnreadable = false;
  for (const candidate of candidates) {
    if (!existsSync(candidate.file)) {
      if (candidate.required) {
        problems.push(`${candidate.shown}: file not found`);
        filesUnreadable = true;
      }
      continue;
    }
    const content = readYaml(candidate.file, candidate.shown, problems);
    if (content === undefined) {
      filesUnreadable = true;
      continue;
    }
    checkKnownKeys(options.schema, content, [], candidate.shown, problems, unknownKeys);
    recordSources(content, [], { kind: 'file', file: candidate.shown }, sources);
    merged = deepMerge(merged, content);
  }

  for (const leaf of leaves(options.schema, [])) {
    const variable = envVariableFor(leaf.path);
    const value = nonEmpty(env[variable]);
    if (value === undefined) continue;
    setPath(merged, leaf.path, coerce(leaf.schema, value));
    sources.set(leaf.path.join('.'), { kind: 'env', variable, value });
  }

  // With a file missing or unparsable, its keys would be reported as unset or
  // defaulted, which misleads; everything else is still worth validating.
  if (!filesUnreadable) {
    const result = options.schema.safeParse(merged);
    if (result.success && problems.length === 0) return deepFreeze(result.data) as DeepReadonly<z.infer<S>>;
    if (!result.success) {
      for (const issue of result.error.issues) problems.push(...describeIssue(issue, options.schema, merged, sources, unknownKeys, shownDir));
    }
  }
  throw new AppError(ErrorCode.CONFIG_INVALID, `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}`);
}

function describeIssue(issue: z.core.$ZodIssue, schema: z.ZodType, merged: PlainObject, sources: Map<string, Source>, unknownKeys: Set<string>, shownDir: string): string[] {
  const issuePath = issue.path.filter((part): part is string | number => typeof part !== 'symbol');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys
      .map((key) => [...issuePath, key].join('.'))
      .filter((key) => !unknownKeys.has(key))
      .map((key) => `${key}: unknown key`);
  }
  const key = issuePath.join('.') || '(root)';
  // The variable is named after the key the schema knows (a list as a whole, not its items).
  const settable = settablePath(schema, issuePath);
  const source = findSource(sources, issuePath);
  let origin: string;
  if (source?.kind === 'env') origin = `from env ${source.variable}${looksSecret(settable) ? '' : `=${JSON.stringify(source.value)}`}`;
  else if (source?.kind === 'file') origin = `from file ${source.file}`;
  else origin = valueAt(merged, issuePath) === undefined ? 'not set' : 'from the default';
  const fix = settable.length > 0 ? `; set ${envVariableFor(settable)} or ${settable.join('.')} in ${source?.kind === 'file' ? source.file : path.join(shownDir, 'ratchet.yaml')}` : '';
  return [`${key}: ${issue.message} (${origin})${fix}`];
}

/** Error messages end up in logs; the value of a key named like a credential stays out of them. */
function looksSecret(keyPath: readonly string[]): boolean {
  return /(key|secret|token|password|credential)/i.test(keyPath[keyPath.length - 1] ?? '');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function readYaml(file: string, shown: string, problems: string[]): PlainObject | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    problems.push(`${shown}: cannot read: ${(error as Error).message}`);
    return undefined;
  }
  const document = parseDocument(text, { prettyErrors: true });
  if (document.errors.length > 0) {
    for (const error of document.errors) {
      const line = error.linePos?.[0];
      problems.push(`${shown}${line ? `:${line.line}:${line.col}` : ''}: YAML syntax error: ${error.message.split('\n')[0]}`);
    }
    return undefined;
  }
  const content: unknown = document.toJS();
  if (content === null || content === undefined) return {};
  if (!isPlainObject(content)) {
    problems.push(`${shown}: expected a mapping of sections at the top level`);
    return undefined;
  }
  return content;
}

function def(schema: z.ZodType): SchemaDef {
  return schema.def as unknown as SchemaDef;
}

/** Strips default/optional/nullable/prefault wrappers to the type that parses the value. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const { type, innerType } = def(current);
    if (innerType && ['default', 'optional', 'nullable', 'prefault', 'readonly', 'catch'].includes(type)) current = innerType;
    else return current;
  }
}

function objectShape(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const inner = def(unwrap(schema));
  return inner.type === 'object' ? inner.shape : undefined;
}

/** A `looseObject` (or `catchall`) accepts keys beyond its shape, so they are no typos. */
function acceptsUnknownKeys(schema: z.ZodType): boolean {
  const catchall = def(unwrap(schema)).catchall;
  return catchall !== undefined && def(catchall).type !== 'never';
}

function* leaves(schema: z.ZodType, prefix: string[]): Generator<Leaf> {
  const shape = objectShape(schema);
  if (!shape) {
    if (prefix.length > 0 && isEnvSettable(schema)) yield { path: prefix, schema };
    return;
  }
  for (const [key, child] of Object.entries(shape)) yield* leaves(child, [...prefix, key]);
}

/** Lists of scalars are settable as comma-separated text; lists of objects are not. */
function isEnvSettable(schema: z.ZodType): boolean {
  const inner = def(unwrap(schema));
  return inner.type !== 'array' || (inner.element !== undefined && objectShape(inner.element) === undefined);
}

/** The longest prefix of `issuePath` that is a key of the schema. */
function settablePath(schema: z.ZodType, issuePath: KeyPath): string[] {
  const result: string[] = [];
  let current: z.ZodType | undefined = schema;
  for (const part of issuePath) {
    const child: z.ZodType | undefined = current ? objectShape(current)?.[String(part)] : undefined;
    if (!child) break;
    result.push(String(part));
    current = child;
  }
  return result;
}

function findSource(sources: Map<string, Source>, issuePath: KeyPath): Source | undefined {
  for (let length = issuePath.length; length > 0; length--) {
    const source = sources.get(issuePath.slice(0, length).join('.'));
    if (source) return source;
  }
  return undefined;
}

function valueAt(root: unknown, keyPath: KeyPath): unknown {
  let node = root;
  for (const part of keyPath) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[part];
  }
  return node;
}

function coerce(schema: z.ZodType, value: string): unknown {
  const inner = def(unwrap(schema));
  switch (inner.type) {
    case 'number':
    case 'int': {
      // Left as text when it is no number, so zod reports it with its type.
      const number = Number(value.trim());
      return Number.isNaN(number) ? value : number;
    }
    case 'boolean':
      if (/^\s*(true|1|yes|on)\s*$/i.test(value)) return true;
      if (/^\s*(false|0|no|off)\s*$/i.test(value)) return false;
      return value;
    case 'enum': {
      const options = Object.values(inner.entries ?? {}).map(String);
      if (options.includes(value)) return value;
      const matches = options.filter((option) => option.toLowerCase() === value.trim().toLowerCase());
      return matches.length === 1 ? matches[0] : value;
    }
    case 'array': {
      const items = value.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
      return inner.element ? items.map((item) => coerce(inner.element as z.ZodType, item)) : items;
    }
    default:
      return value;
  }
}

function checkKnownKeys(schema: z.ZodType, value: unknown, prefix: string[], file: string, problems: string[], unknownKeys: Set<string>): void {
  const shape = objectShape(schema);
  if (!shape || !isPlainObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    const keyPath = [...prefix, key];
    const childSchema = shape[key];
    if (childSchema) {
      checkKnownKeys(childSchema, child, keyPath, file, problems, unknownKeys);
    } else if (!acceptsUnknownKeys(schema)) {
      unknownKeys.add(keyPath.join('.'));
      problems.push(`${keyPath.join('.')}: unknown key in ${file}; known keys here: ${Object.keys(shape).join(', ')}`);
    }
  }
}

function recordSources(value: unknown, prefix: string[], source: Source, sources: Map<string, Source>): void {
  if (isPlainObject(value)) {
    for (const [key, child] of Object.entries(value)) recordSources(child, [...prefix, key], source, sources);
  } else {
    sources.set(prefix.join('.'), source);
  }
}

function deepMerge(base: PlainObject, override: PlainObject): PlainObject {
  const result: PlainObject = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const existing = result[key];
    result[key] = isPlainObject(existing) && isPlainObject(value) ? deepMerge(existing, value) : value;
  }
  return result;
}

function setPath(target: PlainObject, keyPath: readonly string[], value: unknown): void {
  let node = target;
  for (const key of keyPath.slice(0, -1)) {
    const next = node[key];
    if (!isPlainObject(next)) node[key] = {};
    node = node[key] as PlainObject;
  }
  node[keyPath[keyPath.length - 1] as string] = value;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
