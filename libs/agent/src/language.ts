import { AppError, ErrorCode } from '@ratchet/errors';
import { Language } from '@ratchet/contracts';

/** The languages Ratchet writes code in, as domain values. */
export const LanguageName = { PYTHON: 'python', TYPESCRIPT: 'typescript', JAVASCRIPT: 'javascript' } as const;
export type LanguageName = (typeof LanguageName)[keyof typeof LanguageName];

const toProto: Readonly<Record<LanguageName, Language>> = {
  python: Language.LANGUAGE_PYTHON,
  typescript: Language.LANGUAGE_TYPESCRIPT,
  javascript: Language.LANGUAGE_JAVASCRIPT,
};

/** The proto enum value of a language name. */
export function languageToProto(name: LanguageName): Language {
  return toProto[name];
}

/**
 * The language name of a proto value.
 *
 * @throws AppError INVALID_ARGUMENT for LANGUAGE_UNSPECIFIED or an unknown value.
 */
export function languageFromProto(language: Language): LanguageName {
  for (const [name, value] of Object.entries(toProto)) if (value === language) return name as LanguageName;
  throw new AppError(ErrorCode.INVALID_ARGUMENT, `language is unspecified or unknown (${String(language)}); choose python, typescript or javascript`);
}

/**
 * Parses a user's `--lang` value (`python`, `py`, `typescript`, `ts`, `javascript`, `js`).
 *
 * @throws AppError INVALID_ARGUMENT listing the accepted values.
 */
export function parseLanguageName(text: string): LanguageName {
  const normalized = text.trim().toLowerCase();
  const aliases: Readonly<Record<string, LanguageName>> = { python: 'python', py: 'python', typescript: 'typescript', ts: 'typescript', javascript: 'javascript', js: 'javascript' };
  const name = aliases[normalized];
  if (name === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `unknown language ${JSON.stringify(text)}; use python, typescript or javascript`);
  return name;
}

/** How tests are written and named for a language. */
export interface TestConvention {
  readonly framework: string;
  /** Told to the tester model. */
  readonly fileRule: string;
  /** True for paths the test runner treats as test files. */
  isTestPath(filePath: string): boolean;
  /**
   * How code in the language is laid out, tested and run here, for every
   * role that writes or plans code: the planner and the coder need it as
   * much as the tester.
   */
  readonly guide: string;
}

const conventions: Readonly<Record<LanguageName, TestConvention>> = {
  python: {
    framework: 'pytest',
    fileRule: 'tests/test_<topic>.py (pytest discovers test_*.py); import the code under test as a module from the workspace root',
    isTestPath: (filePath) => /(^|\/)(test_[^/]*|[^/]*_test)\.py$/.test(filePath) || /(^|\/)conftest\.py$/.test(filePath),
    guide:
      'Python 3 and its standard library. Tests are pytest files named tests/test_<topic>.py, run with `python -m pytest` from the workspace root, and import the code as modules from that root. ' +
      'A program the user runs has a main() called under `if __name__ == "__main__":` and takes its arguments from sys.argv (argparse); it is run as `python <file>.py ARGS` unless a project profile says how it is run.',
  },
  typescript: {
    framework: "node:test (node's built-in test runner, run with Node 24 type stripping; import from 'node:test' and 'node:assert/strict')",
    fileRule: 'tests/<topic>.test.ts; import the code under test with a relative path ending in .ts',
    isTestPath: (filePath) => /\.test\.(ts|mts|cts)$/.test(filePath),
    guide:
      'TypeScript run directly by Node 24 (type stripping): no build step, no tsc, no dependencies. Use only erasable syntax (no enum, no namespace, no parameter properties, `import type` for types) and import local files with a relative path ending in .ts. ' +
      "Tests are tests/<topic>.test.ts files for Node's built-in runner (import test from 'node:test', assert from 'node:assert/strict'), run with `node --test`. " +
      'Source goes under src/. Always include a package.json with "type": "module" and scripts "test": "node --test" and, for a program the user runs, "start": "node src/<entry>.ts"; the program reads its arguments from process.argv.slice(2).',
  },
  javascript: {
    framework: "node:test (node's built-in test runner; import from 'node:test' and 'node:assert/strict')",
    fileRule: 'tests/<topic>.test.js (or .test.mjs); import the code under test with a relative path',
    isTestPath: (filePath) => /\.test\.(js|mjs|cjs)$/.test(filePath),
    guide:
      "JavaScript (ES modules) for Node 24, standard library only. Tests are tests/<topic>.test.js files for Node's built-in runner (import test from 'node:test', assert from 'node:assert/strict'), run with `node --test`. " +
      'Source goes under src/. Always include a package.json with "type": "module" and scripts "test": "node --test" and, for a program the user runs, "start": "node src/<entry>.js"; the program reads its arguments from process.argv.slice(2).',
  },
};

/** The test conventions of `language`. */
export function testConvention(language: LanguageName): TestConvention {
  return conventions[language];
}
