import { createRequire, SourceMap, stripTypeScriptTypes } from 'node:module';
import type { ESLint, Linter } from 'eslint';
import type { SourceText } from '../domain/analyze';
import { detectionOfEslintMessage, EslintRule, type EslintMessage } from '../domain/eslint-findings';
import { detectionOf, RuleId, Tool, type Detection } from '../domain/findings';
import { Grammar, grammarOf } from '../domain/syntax';

/**
 * eslint-plugin-security ships no types: it is loaded as CommonJS and typed
 * by what CheckCode uses (ESLint's plugin shape and its rule names), so no
 * ambient declaration has to reach every project that compiles this source.
 */
type SecurityPlugin = ESLint.Plugin & { readonly rules: Readonly<Record<string, unknown>> };

/**
 * ESLint and the plugin, loaded on the first JavaScript or TypeScript file:
 * together they are a third of a second of start-up that a service or a CLI
 * command checking only Python (or nothing) would otherwise pay.
 */
function loadEslint(): { LinterClass: typeof Linter; security: SecurityPlugin } {
  const load = createRequire(__filename);
  return { LinterClass: (load('eslint') as typeof import('eslint')).Linter, security: load('eslint-plugin-security') as SecurityPlugin };
}

/** eslint-plugin-security run in-process on JavaScript and TypeScript files. */
export interface EslintScanner {
  /**
   * The plugin's detections in one file, or nothing for a file that is not
   * JavaScript/TypeScript (by extension, or `#!` line). A file ESLint cannot
   * read (TSX, syntax errors, TypeScript that type stripping cannot remove)
   * gets one INFO scanner-skipped detection saying why; the built-in rules
   * still check it.
   */
  scan(file: SourceText): Detection[];
}

/** JavaScript as ESLint reads it, and how to take a position back to the source. */
interface Prepared {
  readonly code: string;
  /** Maps a 1-based position in `code` back to the source; identity when types were only stripped (positions kept). */
  readonly original: (line: number, column: number) => { line: number; column: number } | undefined;
}

const sameSpot = (line: number, column: number) => ({ line, column });

/**
 * ESLint's `Linter` (loaded on first use) with every rule of eslint-plugin-security (what
 * the policy does with each is config/safety.yaml's business). TypeScript
 * is turned into JavaScript without the TypeScript compiler: Node's
 * `stripTypeScriptTypes` replaces types with spaces, so positions stay;
 * enums, namespaces and parameter properties need its transform mode, whose
 * source map takes positions back.
 */
export function createEslintScanner(): EslintScanner {
  let loaded: { linter: Linter; configs: Record<'module' | 'commonjs', Linter.Config[]> } | undefined;
  const eslint = () => {
    if (loaded !== undefined) return loaded;
    const { LinterClass, security } = loadEslint();
    const rules = Object.fromEntries(Object.values(EslintRule).filter((rule) => rule in security.rules).map((rule) => [`security/${rule}`, 'warn' as const]));
    const configFor = (sourceType: 'module' | 'commonjs'): Linter.Config[] => [
      { files: ['**/*'], plugins: { security }, languageOptions: { ecmaVersion: 'latest', sourceType, parserOptions: { ecmaFeatures: { jsx: true } } }, rules },
    ];
    loaded = { linter: new LinterClass({ configType: 'flat' }), configs: { module: configFor('module'), commonjs: configFor('commonjs') } };
    return loaded;
  };

  return {
    scan(file) {
      const grammar = grammarOf(file.path, file.content);
      if (grammar === undefined || grammar === Grammar.PYTHON || grammar === Grammar.BASH || file.content.trim() === '') return [];
      const prepared = prepare(file.content, grammar);
      if (typeof prepared === 'string') return [skipped(file.path, prepared)];
      const { linter, configs } = eslint();
      let messages: Linter.LintMessage[];
      try {
        messages = linter.verify(prepared.code, configs.module, { filename: 'source.mjs' });
        // Not a module (a `with` statement, a top-level return): read it as CommonJS.
        if (messages.some((message) => message.fatal === true)) messages = linter.verify(prepared.code, configs.commonjs, { filename: 'source.cjs' });
      } catch (error) {
        return [skipped(file.path, `eslint-plugin-security failed on this file (${firstLine(error)})`)];
      }
      const fatal = messages.find((message) => message.fatal === true);
      if (fatal !== undefined) return [skipped(file.path, `ESLint could not parse this file (${fatal.message} at line ${fatal.line})`)];
      const lines = file.content.split('\n');
      return messages.flatMap((message) => {
        const position = prepared.original(message.line, message.column);
        const detection = position === undefined ? undefined : detectionOfEslintMessage(file.path, lines, { ...message, ...position } satisfies EslintMessage);
        return detection === undefined ? [] : [detection];
      });
    },
  };
}

/**
 * `stripTypeScriptTypes` without the ExperimentalWarning Node prints the
 * first time it is called: in `ratchet run` it would land on the user's
 * terminal, saying nothing they can act on. Other warnings pass through.
 */
function quietStrip(content: string, options: Parameters<typeof stripTypeScriptTypes>[1]): string {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if ((typeof warning === 'string' ? warning : warning.message).includes('stripTypeScriptTypes')) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return stripTypeScriptTypes(content, options);
  } finally {
    process.emitWarning = emit;
  }
}

/** The file as JavaScript, or why it cannot be. */
function prepare(content: string, grammar: Grammar): Prepared | string {
  if (grammar === Grammar.JAVASCRIPT) return { code: content, original: sameSpot };
  if (grammar === Grammar.TSX) return "Node's type stripping does not read TSX, so eslint-plugin-security did not scan this file";
  try {
    return { code: quietStrip(content, { mode: 'strip' }), original: sameSpot };
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') return `Node's type stripping could not read this file (${firstLine(error)}), so eslint-plugin-security did not scan it`;
  }
  // Enums, namespaces, parameter properties: transform, then map positions back.
  try {
    const code = quietStrip(content, { mode: 'transform', sourceMap: true });
    const map = sourceMapOf(code);
    if (map === undefined) return 'type stripping gave no source map, so eslint-plugin-security did not scan this file';
    return {
      code,
      original: (line, column) => {
        const origin = map.findOrigin(line, column);
        return 'lineNumber' in origin ? { line: origin.lineNumber, column: origin.columnNumber } : undefined;
      },
    };
  } catch (error) {
    return `Node's type stripping could not transform this file (${firstLine(error)}), so eslint-plugin-security did not scan it`;
  }
}

function sourceMapOf(code: string): SourceMap | undefined {
  const match = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,([A-Za-z0-9+/=]+)\s*$/.exec(code);
  if (match?.[1] === undefined) return undefined;
  return new SourceMap(JSON.parse(Buffer.from(match[1], 'base64').toString('utf8')) as ConstructorParameters<typeof SourceMap>[0]);
}

function skipped(path: string, reason: string): Detection {
  return { ...detectionOf(RuleId.SCANNER_SKIPPED, path, `${reason}; the built-in rules still checked it`), tool: Tool.ESLINT };
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return (text.split('\n')[0] ?? '').slice(0, 200);
}
