import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parseDocument } from 'yaml';
import type { z } from 'zod';

export interface LoadConfigOptions<S extends z.ZodType> {
  readonly schema: S;
  /** Service name: `<service>.yaml` is merged over `ratchet.yaml`. */
  readonly service?: string;
  /** Default: `RATCHET_CONFIG_DIR`, else `config/` under the working directory. */
  readonly configDir?: string;
  /** Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export type DeepReadonly<T> = T extends (infer U)[] ? readonly DeepReadonly<U>[] : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

type Source = { kind: 'file'; file: string } | { kind: 'env'; variable: string; value: string };
type PlainObject = Record<string, unknown>;

const isPlainObject = (value: unknown): value is PlainObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `bus.natsUrl` -> `RATCHET_BUS_NATS_URL`. */
export function envVariableFor(keyPath: readonly (string | number)[]): string {
  return `RATCHET_${keyPath.map((part) => String(part).replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_')}`;
}

/**
 * Parses the configuration once: `ratchet.yaml`, then `<service>.yaml`, then
 * `RATCHET_*` environment variables (empty ones count as unset), validated by
 * `schema` and deeply frozen.
 * @throws AppError CONFIG_INVALID listing every bad key, where its value came
 *   from and the variable that fixes it; also for unreadable or invalid YAML
 *   and for keys the schema does not know (typos).
 */
export function loadConfig<S extends z.ZodType>(options: LoadConfigOptions<S>): DeepReadonly<z.infer<S>> {
  const env = options.env ?? process.env;
  const configDir = options.configDir ?? (nonEmpty(env['RATCHET_CONFIG_DIR']) || path.resolve('config'));
  const problems: string[] = [];
  const sources = new Map<string, Source>();

  let merged: PlainObject = {};
  const files = ['ratchet.yaml', ...(options.service ? [`${options.service}.yaml`] : [])];
  for (const name of files) {
    const file = path.join(configDir, name);
    if (!existsSync(file)) continue;
    const content = readYaml(file, problems);
    if (content === undefined) continue;
    checkKnownKeys(options.schema, content, [], name, problems);
    recordSources(content, [], { kind: 'file', file: name }, sources);
    merged = deepMerge(merged, content);
  }

  for (const leaf of leaves(options.schema, [])) {
    const variable = envVariableFor(leaf.path);
    const value = nonEmpty(env[variable]);
    if (value === undefined) continue;
    setPath(merged, leaf.path, coerce(leaf.type, value));
    sources.set(leaf.path.join('.'), { kind: 'env', variable, value });
  }

  if (problems.length === 0) {
    const result = options.schema.safeParse(merged);
    if (result.success) return deepFreeze(result.data) as DeepReadonly<z.infer<S>>;
    for (const issue of result.error.issues) {
      const key = issue.path.join('.');
      const source = sources.get(key);
      const origin = source === undefined ? 'default' : source.kind === 'env' ? `env ${source.variable}=${JSON.stringify(source.value)}` : `file ${source.file}`;
      problems.push(`${key || '(root)'}: ${issue.message} (from ${origin}); set ${envVariableFor(issue.path as (string | number)[])} or ${key} in ${path.join(path.basename(configDir), files[0] as string)}`);
    }
  }
  throw new AppError(ErrorCode.CONFIG_INVALID, `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}`);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function readYaml(file: string, problems: string[]): PlainObject | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    problems.push(`${file}: cannot read: ${(error as Error).message}`);
    return undefined;
  }
  const document = parseDocument(text, { prettyErrors: true });
  if (document.errors.length > 0) {
    for (const error of document.errors) {
      const line = error.linePos?.[0];
      problems.push(`${path.basename(file)}${line ? `:${line.line}:${line.col}` : ''}: YAML syntax error: ${error.message.split('\n')[0]}`);
    }
    return undefined;
  }
  const content: unknown = document.toJS();
  if (content === null || content === undefined) return {};
  if (!isPlainObject(content)) {
    problems.push(`${path.basename(file)}: expected a mapping of sections at the top level`);
    return undefined;
  }
  return content;
}

interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
}

/** Strips default/optional/nullable/prefault wrappers to the type that parses the value. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const def = current.def as unknown as SchemaDef;
    if (def.innerType && ['default', 'optional', 'nullable', 'prefault', 'readonly', 'catch'].includes(def.type)) current = def.innerType;
    else return current;
  }
}

function objectShape(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const def = unwrap(schema).def as unknown as SchemaDef;
  return def.type === 'object' ? (def.shape ?? (unwrap(schema) as unknown as { shape: Record<string, z.ZodType> }).shape) : undefined;
}

function* leaves(schema: z.ZodType, prefix: string[]): Generator<{ path: string[]; type: string }> {
  const shape = objectShape(schema);
  if (!shape) {
    if (prefix.length > 0) yield { path: prefix, type: (unwrap(schema).def as unknown as SchemaDef).type };
    return;
  }
  for (const [key, child] of Object.entries(shape)) yield* leaves(child, [...prefix, key]);
}

function coerce(type: string, value: string): unknown {
  switch (type) {
    case 'number': {
      const number = Number(value);
      return Number.isNaN(number) ? value : number;
    }
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(value)) return true;
      if (/^(false|0|no|off)$/i.test(value)) return false;
      return value;
    case 'array':
      return value.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
    default:
      return value;
  }
}

function checkKnownKeys(schema: z.ZodType, value: unknown, prefix: string[], file: string, problems: string[]): void {
  const shape = objectShape(schema);
  if (!shape || !isPlainObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    const keyPath = [...prefix, key];
    const childSchema = shape[key];
    if (!childSchema) {
      problems.push(`${keyPath.join('.')}: unknown key in ${file}; known keys here: ${Object.keys(shape).join(', ')}`);
      continue;
    }
    checkKnownKeys(childSchema, child, keyPath, file, problems);
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
