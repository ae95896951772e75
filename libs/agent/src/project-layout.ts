import { testConvention, type LanguageName } from './language';

/** A file of an existing project: its path and, for text files, its content. */
interface LayoutFile {
  readonly path: string;
  readonly content: string;
}

/** The language basics every role needs, without the greenfield layout (where tests go, how a program starts). */
const basics: Readonly<Record<LanguageName, string>> = {
  python: 'Python 3. This is an existing project: follow its layout and conventions, not a new project\'s.',
  typescript: 'TypeScript run by Node 24. This is an existing project: follow its layout, module style and conventions, not a new project\'s.',
  javascript: 'JavaScript for Node 24. This is an existing project: follow its layout, module style and conventions, not a new project\'s.',
};

/** Directories named here at most, most test files first. */
const maxDirectories = 4;

/**
 * How an existing project is laid out and tested, for the planner's and the
 * coder's language guide instead of the greenfield convention
 * ("tests/test_<topic>.py"): where its tests live and how they are named
 * (with an example), the test runner's configured paths (pytest's
 * `testpaths` in pyproject.toml, setup.cfg, pytest.ini or tox.ini; the
 * `test` script of package.json), whether the code is in a `src/` layout,
 * and the packages at the root. Read from the files alone, so every role
 * sees the same text.
 *
 * @returns the guide; the language's convention when `files` is empty (a greenfield task).
 */
export function projectGuide(language: LanguageName, files: readonly LayoutFile[]): string {
  if (files.length === 0) return testConvention(language).guide;
  const lines = [basics[language], ...testLayout(language, files), ...codeLayout(language, files.filter((file) => !/(^|\/)tests?\//.test(file.path)))];
  return lines.join(' ');
}

function testLayout(language: LanguageName, files: readonly LayoutFile[]): string[] {
  const convention = testConvention(language);
  const tests = files.filter((file) => convention.isTestPath(file.path) && !/(^|\/)conftest\.py$/.test(file.path));
  const lines: string[] = [];
  if (tests.length === 0) {
    lines.push('The project has no test files of the usual names yet; put new ones where its configuration below says, or in tests/.');
  } else {
    const byDirectory = new Map<string, string[]>();
    for (const file of tests) {
      const directory = file.path.includes('/') ? file.path.slice(0, file.path.lastIndexOf('/')) : '.';
      byDirectory.set(directory, [...(byDirectory.get(directory) ?? []), file.path]);
    }
    const ranked = [...byDirectory.entries()].sort((left, right) => right[1].length - left[1].length || (left[0] < right[0] ? -1 : 1));
    const shown = ranked.slice(0, maxDirectories).map(([directory, paths]) => `${directory === '.' ? 'the root' : `${directory}/`} (${paths.length}, e.g. ${paths[0]})`);
    const more = ranked.length > maxDirectories ? ` and ${ranked.length - maxDirectories} more director${ranked.length - maxDirectories === 1 ? 'y' : 'ies'}` : '';
    lines.push(`Its tests are in ${shown.join(', ')}${more}; a new test goes beside the existing ones on the same subject, named and written like them.`);
    if (language === 'python') {
      const unittest = tests.filter((file) => /^\s*(import unittest|from unittest import)/m.test(file.content) && /\(\s*(unittest\.)?TestCase\s*\)/.test(file.content)).length;
      if (unittest * 2 > tests.length) lines.push('Most of them are unittest TestCase classes (pytest runs them too); write new ones the same way.');
    }
  }
  const configured = runnerConfig(language, files);
  if (configured !== undefined) lines.push(configured);
  return lines;
}

/** What the test runner's configuration says, in one sentence; undefined when nothing is configured. */
function runnerConfig(language: LanguageName, files: readonly LayoutFile[]): string | undefined {
  const byPath = new Map(files.map((file) => [file.path, file.content]));
  if (language === 'python') {
    const sources: [string, string | undefined][] = [
      ['pyproject.toml', tomlSection(byPath.get('pyproject.toml'), 'tool.pytest.ini_options')],
      ['pytest.ini', iniSection(byPath.get('pytest.ini'), 'pytest')],
      ['setup.cfg', iniSection(byPath.get('setup.cfg'), 'tool:pytest')],
      ['tox.ini', iniSection(byPath.get('tox.ini'), 'pytest')],
    ];
    for (const [file, section] of sources) {
      if (section === undefined) continue;
      const paths = settingValues(section, 'testpaths');
      const options = settingValues(section, 'addopts');
      const parts = [paths.length > 0 ? `testpaths = ${paths.join(' ')}` : '', options.length > 0 ? `addopts = ${options.join(' ')}` : ''].filter((part) => part !== '');
      return parts.length === 0 ? `pytest is configured in ${file}.` : `pytest is configured in ${file} (${parts.join('; ')}).`;
    }
    return undefined;
  }
  const manifest = byPath.get('package.json');
  if (manifest === undefined) return undefined;
  try {
    const scripts = (JSON.parse(manifest) as { scripts?: Record<string, unknown> }).scripts;
    const test = scripts?.['test'];
    return typeof test === 'string' ? `package.json runs its tests with "${test.length > 200 ? `${test.slice(0, 200)}...` : test}".` : undefined;
  } catch {
    return undefined;
  }
}

function codeLayout(language: LanguageName, files: readonly LayoutFile[]): string[] {
  if (language !== 'python') {
    const roots = topDirectories(files.filter((file) => /\.(m|c)?(j|t)sx?$/.test(file.path) && !testConvention(language).isTestPath(file.path)).map((file) => file.path));
    return roots.length === 0 ? [] : [`Its code is under ${roots.join(', ')}.`];
  }
  const packages = new Set<string>();
  let srcLayout = false;
  for (const file of files) {
    const match = /^(src\/)?([A-Za-z_][A-Za-z0-9_]*)\/__init__\.py$/.exec(file.path);
    if (match === null) continue;
    if (match[1] !== undefined) srcLayout = true;
    packages.add(`${match[1] ?? ''}${match[2]}/`);
  }
  if (packages.size === 0) {
    const modules = files.filter((file) => /^[A-Za-z_][A-Za-z0-9_]*\.py$/.test(file.path) && file.path !== 'setup.py' && file.path !== 'conftest.py').map((file) => file.path);
    return modules.length === 0 ? [] : [`Its code is in top-level modules (${modules.slice(0, 5).join(', ')}${modules.length > 5 ? ', ...' : ''}).`];
  }
  const listed = [...packages].sort().slice(0, 5);
  const line = `Its package${packages.size === 1 ? ' is' : 's are'} ${listed.join(', ')}${packages.size > 5 ? ', ...' : ''}.`;
  return srcLayout ? [line, 'It uses a src/ layout: code imports the package by its name (not `src.`), which works once the project is installed or src/ is on the path.'] : [line];
}

/** The first path segments of `paths`, most used first. */
function topDirectories(paths: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const path of paths) {
    const top = path.includes('/') ? `${path.slice(0, path.indexOf('/'))}/` : 'the root';
    counts.set(top, (counts.get(top) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((left, right) => right[1] - left[1])
    .slice(0, maxDirectories)
    .map(([top]) => top);
}

/** The body of TOML table `[name]` (to the next table header); undefined without one. */
function tomlSection(text: string | undefined, name: string): string | undefined {
  if (text === undefined) return undefined;
  const header = new RegExp(`^\\[${name.replace(/\./g, '\\.')}\\]\\s*$`, 'm').exec(text);
  if (header === null) return undefined;
  const rest = text.slice(header.index + header[0].length);
  const next = /^\[[^\]]+\]\s*$/m.exec(rest);
  return next === null ? rest : rest.slice(0, next.index);
}

/** The body of INI section `[name]`; undefined without one. */
function iniSection(text: string | undefined, name: string): string | undefined {
  return tomlSection(text, name);
}

/** The values of `key` in a TOML or INI section: a TOML string or array, or INI words (continuation lines included). */
function settingValues(section: string, key: string): string[] {
  const match = new RegExp(`^${key}\\s*[=:]\\s*(.*(?:\\n[ \\t]+.*)*)`, 'm').exec(section);
  if (match === null) return [];
  const value = (match[1] ?? '').trim();
  const quoted = [...value.matchAll(/["']([^"']*)["']/g)].map((part) => part[1] ?? '');
  return (quoted.length > 0 ? quoted : value.split(/\s+/)).filter((part) => part !== '').slice(0, 8);
}
