import { DefinitionKind, type Definition, type DefinitionExtractor, type FileOutline } from './definitions';
import { countTokens } from '@ratchet/agent';

/** One workspace file as the map sees it. */
export interface RepoFile {
  readonly path: string;
  readonly content: string;
}

/** What the current attempt is about, beyond the goal. */
export interface RepoMapFocus {
  /** Failing test ids as reports give them: `tests/test_calc.py::test_add`, `tests.test_calc::test_add`, `calc > adds`. */
  readonly failingTests?: readonly string[];
  /** Workspace paths the task or plan names. */
  readonly mentionedPaths?: readonly string[];
  /** Error output (tracebacks, compiler errors) of the last run. */
  readonly errorText?: string;
}

/** Input of `buildRepoMap`. */
export interface RepoMapRequest {
  readonly files: readonly RepoFile[];
  readonly goal: string;
  readonly focus?: RepoMapFocus;
  /** Upper bound on the map's tokens (o200k_base, see `countTokens`). */
  readonly budgetTokens: number;
  /** Outlines the files that are shown; without one, files are listed by path only. */
  readonly extractor?: DefinitionExtractor;
  /** `rankFiles` of the same files, goal and focus, when the caller has it already; default ranked here. */
  readonly ranking?: readonly RankedFile[];
}

/** A map cut to its budget, with which files it names and which it leaves out. */
export interface RepoMap {
  /** The map; empty when not even the closing line fits. */
  readonly text: string;
  /** `countTokens(text)`; never more than the budget. */
  readonly tokens: number;
  /** Paths the map names, most relevant first (outlined ones, then listed ones). */
  readonly includedFiles: readonly string[];
  /** Paths shown with their definitions: a prefix of `includedFiles`. */
  readonly outlinedFiles: readonly string[];
  /** Paths the map leaves out, most relevant first; counted on the closing line. */
  readonly omittedFiles: readonly string[];
}

/** A file's place in the ranking and why. */
export interface RankedFile {
  readonly path: string;
  readonly score: number;
  /** Each part of the score, e.g. `mentioned +100`, in the order they were added. */
  readonly reasons: readonly string[];
}

/** Points per signal; see `rankFiles`. */
const weights = {
  mentioned: 100,
  importedByFailingTest: 50,
  subjectOfFailingTest: 30,
  definesTerm: 30,
  definesWord: 20,
  maxDefinesTerm: 90,
  namedByTerm: 20,
  testOfRelevant: 15,
  directoryNamed: 10,
} as const;

/** A file at least this relevant makes its tests relevant too. */
const relevantScore = 20;
/** Definitions shown per file; the rest are counted on one line. */
const maxDefinitionsPerFile = 60;
/** Terms searched for; a goal with more words than this keeps the first ones. */
const maxTerms = 200;
/** Characters of a term at most. */
const maxTermLength = 80;
/** Only the start of a very large file is searched for definitions of terms. */
const maxScannedCharacters = 256 * 1024;
/** A file this long whose lines average more characters than this is minified (hand-written code averages under 60). */
const minifiedMinCharacters = 2_000;
const minifiedLineCharacters = 250;

/**
 * Ranks workspace files by relevance to a goal and focus, most relevant
 * first. The score is a sum of transparent, deterministic signals:
 *
 * - mentioned +100: the file's path is named in `focus.mentionedPaths`, or a
 *   path (`src/calc.py`, `/workspace/src/calc.py`, `calc.py`) or dotted module
 *   (`tests.test_calc`) appears in the goal, a failing test id or the error
 *   text; a test file defining a failing test's function (`test_add` in
 *   `tests/test_calc.py`) counts as named too;
 * - imported by a failing test +50: a failing test file (one named by a
 *   failing test id, or a test file defining a failing test's function)
 *   imports it (Python `import`/`from`, JS/TS `import`/`require`, resolved
 *   relative to the test or by module path);
 * - subject of a failing test +30: it is the module a failing test file is
 *   named after (`calc.py` for `test_calc.py`, `calc.ts` for `calc.spec.ts`);
 * - defines a term, at most +90: it has `def`, `class`, `function`,
 *   `interface`, `type`, `enum`, `const`/`let`/`var` followed by a word of
 *   the goal, failing test names or error text (paths taken out;
 *   case-insensitive): +30 for each code-like one (`parse_config`,
 *   `parseConfig`, `Calculator.add`, `` `total` ``, `render(`; and from a
 *   test name `test_add_two`, also `add_two` and `add`), +20 for each plain word;
 * - named by a term +20: its name without extension is such a term;
 * - test of a relevant file +15: it is a test file named after a file that
 *   scored at least 20 from the signals above;
 * - directory named +10: one of its directories is such a term.
 *
 * Ties are broken by depth (fewer directories first), then size (smaller
 * first, empty files last), then path (code-unit order). Identical input
 * always gives the identical ranking. Linear in the total content size: each
 * file's first 256 KiB is scanned once with one regular expression.
 */
export function rankFiles(files: readonly RepoFile[], goal: string, focus: RepoMapFocus = {}): RankedFile[] {
  const infos = files.map(describeFile);
  const index = new FileIndex(infos);
  const scores = infos.map(() => ({ score: 0, reasons: [] as string[] }));
  const add = (fileIndex: number, points: number, reason: string) => {
    const entry = scores[fileIndex];
    if (entry === undefined) return;
    entry.score += points;
    entry.reasons.push(`${reason} +${points}`);
  };

  const testText = (focus.failingTests ?? []).join('\n');
  const allText = [goal, focus.errorText ?? '', testText].join('\n');
  const mentioned = new Set<number>();
  for (const path of [...(focus.mentionedPaths ?? []), ...pathMentions(allText)]) for (const match of index.byPath(path)) mentioned.add(match);
  for (const dotted of dottedMentions(allText)) for (const match of index.byModule(dotted.split('.').join('/'))) mentioned.add(match);
  for (const match of [...mentioned].sort((left, right) => left - right)) add(match, weights.mentioned, 'mentioned');

  const terms = termsOf(allText, testText);
  const definedTerms = definitionsOfTerms(files, [...terms.keys()]);
  const failingTestFiles = new Set<number>();
  for (const path of pathMentions(testText)) for (const match of index.byPath(path)) failingTestFiles.add(match);
  for (const dotted of dottedMentions(testText)) for (const match of index.byModule(dotted.split('.').join('/'))) failingTestFiles.add(match);
  const testFunctionNames = new Set(testNamesOf(focus.failingTests ?? []).map((name) => name.toLowerCase()));
  definedTerms.forEach((defined, fileIndex) => {
    if (infos[fileIndex]?.isTest !== true || !defined.some((term) => testFunctionNames.has(term))) return;
    // A report may name the test function only; its file counts as named.
    if (!mentioned.has(fileIndex)) add(fileIndex, weights.mentioned, 'defines a failing test');
    failingTestFiles.add(fileIndex);
  });

  const imported = new Set<number>();
  const subjects = new Set<number>();
  for (const testIndex of failingTestFiles) {
    const info = infos[testIndex];
    const file = files[testIndex];
    if (info === undefined || file === undefined) continue;
    for (const match of index.importsOf(info, file.content)) if (match !== testIndex) imported.add(match);
    if (info.isTest) for (const match of index.byStem(info.subject)) if (!(infos[match]?.isTest ?? true)) subjects.add(match);
  }
  for (const match of [...imported].sort((left, right) => left - right)) add(match, weights.importedByFailingTest, 'imported by a failing test');
  for (const match of [...subjects].sort((left, right) => left - right)) add(match, weights.subjectOfFailingTest, 'subject of a failing test');

  const termSet = new Set([...terms.keys()].map((term) => term.toLowerCase()));
  const codeTerms = new Set([...terms].filter(([, codeLike]) => codeLike).map(([term]) => term.toLowerCase()));
  infos.forEach((info, fileIndex) => {
    const defined = definedTerms.get(fileIndex);
    if (defined !== undefined) {
      const points = defined.reduce((sum, term) => sum + (codeTerms.has(term) ? weights.definesTerm : weights.definesWord), 0);
      add(fileIndex, Math.min(weights.maxDefinesTerm, points), `defines ${defined.join(', ')}`);
    }
    if (termSet.has(info.stem.toLowerCase())) add(fileIndex, weights.namedByTerm, 'named by a term');
    if (info.directories.some((directory) => termSet.has(directory.toLowerCase()))) add(fileIndex, weights.directoryNamed, 'directory named');
  });

  const relevantStems = new Set<string>();
  infos.forEach((info, fileIndex) => {
    if (!info.isTest && (scores[fileIndex]?.score ?? 0) >= relevantScore) relevantStems.add(info.stem.toLowerCase());
  });
  infos.forEach((info, fileIndex) => {
    if (info.isTest && relevantStems.has(info.subject.toLowerCase())) add(fileIndex, weights.testOfRelevant, 'test of a relevant file');
  });

  const order = infos.map((_, fileIndex) => fileIndex);
  order.sort((left, right) => {
    const a = infos[left] as FileInfo;
    const b = infos[right] as FileInfo;
    return (
      (scores[right]?.score ?? 0) - (scores[left]?.score ?? 0) ||
      a.depth - b.depth ||
      sizeRank(a.size) - sizeRank(b.size) ||
      (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)
    );
  });
  return order.map((fileIndex) => ({ path: infos[fileIndex]?.path ?? '', score: scores[fileIndex]?.score ?? 0, reasons: scores[fileIndex]?.reasons ?? [] }));
}

/**
 * A map of the workspace for a prompt, most relevant files first (see
 * `rankFiles`), that never takes more than `budgetTokens` tokens. Format:
 *
 * ```
 * src/calc.py:
 *   3: class Calculator(Base) [add, subtract]
 *   12: def parse(text: str) -> Expr
 * README.md:
 * tests/test_other.py
 * ... and 9412 more files (use list_files / search)
 * ```
 *
 * Files ending in `:` are outlined (their top-level definitions, each with its
 * 1-based line; none for other languages); then, while the budget allows,
 * further files by path only; then the count of files left out. Outlines
 * come from `extractor`, asked only for the files shown. A budget smaller
 * than one line gives only the closing line, or an empty map when even that
 * does not fit. Only the emitted lines are tokenized.
 */
export function buildRepoMap(request: RepoMapRequest): RepoMap {
  const budget = Math.max(0, Math.floor(request.budgetTokens));
  const contentOf = new Map(request.files.map((file) => [file.path, file.content]));
  const ranked = (request.ranking ?? rankFiles(request.files, request.goal, request.focus)).map((file) => file.path);
  // The closing line for every file is the dearest it can be: the count only shrinks.
  const reserve = countTokens(`${closingLine(ranked.length)}\n`);
  const lines: string[] = [];
  let used = 0;
  let next = 0;
  let outlined = 0;

  // Outlines, in rank order, while they fit; the first that does not fit whole is cut.
  for (; next < ranked.length; next += 1) {
    const path = ranked[next] as string;
    const content = contentOf.get(path) ?? '';
    // A bundle's definitions are single letters on one line: noise where the map should name the project's code.
    const outline = looksMinified(content) ? { definitions: [], note: 'minified: not outlined' } : (request.extractor?.outline(path, content) ?? { definitions: [] });
    const { lines: block, headerLines } = outlineLines(path, outline);
    const costs = block.map((line) => countTokens(`${line}\n`));
    const room = budget - used - (next + 1 < ranked.length ? reserve : 0);
    const whole = fittingLines(costs, room);
    if (whole.count === block.length) {
      lines.push(...block);
      used += whole.cost;
      outlined += 1;
      continue;
    }
    // The first outline that does not fit whole is cut, and says so, so the
    // model does not take a missing definition for an absent one.
    const cutLine = (shown: number) => `  … ${outline.definitions.length - Math.max(0, shown - headerLines)} more definitions`;
    const part = fittingLines(costs, room - countTokens(`${cutLine(0)}\n`));
    if (part.count > 0) {
      const cut = cutLine(part.count);
      lines.push(...block.slice(0, part.count), cut);
      used += part.cost + countTokens(`${cut}\n`);
      outlined += 1;
      next += 1;
    }
    break;
  }

  // Then paths alone.
  for (; next < ranked.length; next += 1) {
    const path = ranked[next] as string;
    const cost = countTokens(`${path}\n`);
    if (used + cost + (next + 1 < ranked.length ? reserve : 0) > budget) break;
    lines.push(path);
    used += cost;
  }

  // Lines were counted one by one; tokens can merge across a line break, so
  // the whole text is counted once and lines dropped in the rare case it is over.
  let shown = next;
  for (;;) {
    const omitted = ranked.length - shown;
    const closing = omitted > 0 ? closingLine(omitted) : undefined;
    const text = [...lines, ...(closing === undefined ? [] : [closing])].join('\n');
    const tokens = countTokens(text);
    if (tokens <= budget) {
      const included = ranked.slice(0, shown);
      return { text, tokens, includedFiles: included, outlinedFiles: included.slice(0, Math.min(outlined, shown)), omittedFiles: ranked.slice(shown) };
    }
    if (lines.length === 0) return { text: '', tokens: 0, includedFiles: [], outlinedFiles: [], omittedFiles: ranked };
    const dropped = lines.pop() as string;
    // A dropped path line or outline header removes its file from the map.
    if (!dropped.startsWith(' ')) shown -= 1;
  }
}

function closingLine(omitted: number): string {
  return `... and ${omitted} more files (use list_files / search)`;
}

const membersShown: ReadonlySet<string> = new Set([DefinitionKind.CLASS, DefinitionKind.INTERFACE, DefinitionKind.ENUM]);

/**
 * Whether `content` reads like a minified bundle: long, with lines far
 * longer than code is written in. Asked of every file of a workspace, so it
 * counts line breaks without splitting, and stops as soon as there are
 * enough of them for ordinary code.
 */
export function looksMinified(content: string): boolean {
  if (content.length < minifiedMinCharacters) return false;
  // More lines than this and the average line is short enough.
  const maxLines = content.length / minifiedLineCharacters;
  let lines = 1;
  for (let at = content.indexOf('\n'); at >= 0; at = content.indexOf('\n', at + 1)) {
    lines += 1;
    if (lines >= maxLines) return false;
  }
  return true;
}

/** The lines of one outline; `headerLines` come before the first definition. */
function outlineLines(path: string, outline: FileOutline): { readonly lines: string[]; readonly headerLines: number } {
  const lines = [`${path}:`];
  if (outline.note !== undefined) lines.push(`  (${outline.note})`);
  const headerLines = lines.length;
  const shown = outline.definitions.slice(0, maxDefinitionsPerFile);
  for (const definition of shown) lines.push(`  ${definition.line}: ${signatureOf(definition)}`);
  if (outline.definitions.length > shown.length) lines.push(`  … ${outline.definitions.length - shown.length} more definitions`);
  return { lines, headerLines };
}

/** How many of the leading lines, with these costs, fit in `room` tokens, and what they cost. */
function fittingLines(costs: readonly number[], room: number): { readonly count: number; readonly cost: number } {
  let count = 0;
  let cost = 0;
  while (count < costs.length && cost + (costs[count] ?? 0) <= room) cost += costs[count++] ?? 0;
  return { count, cost };
}

function signatureOf(definition: Definition): string {
  return membersShown.has(definition.kind) && definition.members.length > 0 ? `${definition.signature} [${definition.members.join(', ')}]` : definition.signature;
}

// Empty files say nothing, so they go after files of any size.
function sizeRank(size: number): number {
  return size === 0 ? Number.MAX_SAFE_INTEGER : size;
}

interface FileInfo {
  readonly path: string;
  /** The name without its extension. */
  readonly stem: string;
  /** The path without extension, and without a trailing `/__init__` or `/index`: what an import names. */
  readonly modulePath: string;
  readonly directories: readonly string[];
  readonly depth: number;
  readonly size: number;
  readonly isTest: boolean;
  /** For a test file, the stem of the module it tests (`calc` for `test_calc.py`); else the stem. */
  readonly subject: string;
}

const testFilePattern = /(^|\/)(tests?|__tests__|spec)\/|(^|\/)test_[^/]*$|_test\.[^/.]+$|\.(test|spec)\.[^/.]+$/;

function describeFile(file: RepoFile): FileInfo {
  const path = normalizePath(file.path);
  const segments = path.split('/');
  const name = segments[segments.length - 1] ?? path;
  const dot = name.lastIndexOf('.');
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const withoutExtension = segments.length > 1 ? `${segments.slice(0, -1).join('/')}/${stem}` : stem;
  const modulePath = (stem === '__init__' || stem === 'index') && segments.length > 1 ? segments.slice(0, -1).join('/') : withoutExtension;
  const isTest = testFilePattern.test(path);
  const subject = isTest ? stem.replace(/^test_/, '').replace(/(_test|\.test|\.spec)$/, '') : stem;
  return { path: file.path, stem, modulePath, directories: segments.slice(0, -1), depth: segments.length - 1, size: file.content.length, isTest, subject };
}

function normalizePath(path: string): string {
  return path.replace(/\\/g, '/').replace(/^(\.\/)+/, '').replace(/^\/+/, '');
}

/** Lookups from names found in text to file indices. */
class FileIndex {
  private readonly byName = new Map<string, number[]>();
  private readonly byModuleLeaf = new Map<string, number[]>();
  private readonly byStemLower = new Map<string, number[]>();
  private readonly byModulePath = new Map<string, number[]>();

  constructor(private readonly infos: readonly FileInfo[]) {
    infos.forEach((info, fileIndex) => {
      const segments = normalizePath(info.path).split('/');
      push(this.byName, segments[segments.length - 1] ?? '', fileIndex);
      push(this.byModuleLeaf, info.modulePath.slice(info.modulePath.lastIndexOf('/') + 1), fileIndex);
      push(this.byStemLower, info.stem.toLowerCase(), fileIndex);
      push(this.byModulePath, info.modulePath, fileIndex);
    });
  }

  /** Files whose path equals `mention`, ends with it, or is its tail (an absolute path in a traceback). */
  byPath(mention: string): number[] {
    const normalized = normalizePath(mention);
    const name = normalized.slice(normalized.lastIndexOf('/') + 1);
    return (this.byName.get(name) ?? []).filter((fileIndex) => {
      const path = normalizePath(this.infos[fileIndex]?.path ?? '');
      return path === normalized || path.endsWith(`/${normalized}`) || normalized.endsWith(`/${path}`);
    });
  }

  /** Files whose module path (`a/b/c` for `a/b/c.py` or `a/b/c/__init__.py`) ends with `modulePath`. */
  byModule(modulePath: string): number[] {
    const leaf = modulePath.slice(modulePath.lastIndexOf('/') + 1);
    return (this.byModuleLeaf.get(leaf) ?? []).filter((fileIndex) => {
      const own = this.infos[fileIndex]?.modulePath ?? '';
      return own === modulePath || own.endsWith(`/${modulePath}`);
    });
  }

  byStem(stem: string): number[] {
    return this.byStemLower.get(stem.toLowerCase()) ?? [];
  }

  /** The workspace files `content` (the file `info`) imports. */
  importsOf(info: FileInfo, content: string): number[] {
    const directory = info.directories.join('/');
    const found = new Set<number>();
    for (const specifier of importSpecifiers(info.path, content)) {
      if (specifier.relative) {
        const resolved = joinPath(directory, specifier.module);
        for (const match of this.byModulePath.get(stripExtension(resolved)) ?? []) found.add(match);
      } else {
        for (const match of this.byModule(stripExtension(specifier.module))) found.add(match);
      }
    }
    return [...found];
  }
}

function push(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function stripExtension(path: string): string {
  const stripped = path.replace(/\.(py|pyi|js|mjs|cjs|jsx|ts|mts|cts|tsx)$/, '');
  return stripped.replace(/\/(__init__|index)$/, '');
}

/** `directory` joined with a relative `path`, `..` resolved; `..` past the root is dropped. */
function joinPath(directory: string, path: string): string {
  const parts = directory === '' ? [] : directory.split('/');
  for (const part of path.split('/')) {
    if (part === '..') parts.pop();
    else if (part !== '.' && part !== '') parts.push(part);
  }
  return parts.join('/');
}

interface ImportSpecifier {
  /** A path (`./calc`, `../lib/x`) or module (`pkg/mod` for Python `pkg.mod`). */
  readonly module: string;
  readonly relative: boolean;
}

const pythonFrom = /^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([\w, \t*]+)/gm;
const pythonImport = /^[ \t]*import[ \t]+([\w., \t]+)/gm;
const scriptImport = /(?:\bfrom|\bimport|\brequire[ \t]*\(|\bimport[ \t]*\()[ \t]*['"]([^'"\n]+)['"]/g;

/** What a Python or JS/TS file imports, found by regular expressions (good enough to rank by). */
function importSpecifiers(path: string, content: string): ImportSpecifier[] {
  const specifiers: ImportSpecifier[] = [];
  const text = content.length > maxScannedCharacters ? content.slice(0, maxScannedCharacters) : content;
  if (/\.pyi?$/.test(path)) {
    for (const match of text.matchAll(pythonFrom)) {
      const dots = match[1] ?? '';
      const module = (match[2] ?? '').split('.').filter((part) => part !== '').join('/');
      const names = (match[3] ?? '').split(',').map((name) => name.trim().split(/\s+/)[0] ?? '').filter((name) => /^\w+$/.test(name));
      // `from .. import x` is `../x`; `from pkg import mod` may name a submodule.
      const base = dots === '' ? module : [dots.length > 1 ? '../'.repeat(dots.length - 1) : './', module].join('');
      const relative = dots !== '';
      if (module !== '') specifiers.push({ module: base, relative });
      for (const name of names) specifiers.push({ module: module === '' ? `${base}${name}` : `${base}/${name}`, relative });
    }
    for (const match of text.matchAll(pythonImport)) {
      for (const part of (match[1] ?? '').split(',')) {
        const module = part.trim().split(/\s+/)[0] ?? '';
        if (module !== '') specifiers.push({ module: module.split('.').join('/'), relative: false });
      }
    }
  } else {
    for (const match of text.matchAll(scriptImport)) {
      const module = match[1] ?? '';
      specifiers.push({ module, relative: module.startsWith('.') });
    }
  }
  return specifiers;
}

const knownExtensions = 'py|pyi|js|mjs|cjs|jsx|ts|mts|cts|tsx|json|ya?ml|toml|md|cfg|ini|txt|sh|go|rs|java|rb|c|h|cc|cpp|hpp|cs|kt|swift|php|html|css|sql';
// A path with a directory part, or a bare file name with a known extension. A path starts where a word does and its
// parts are bounded, so a long word without a slash (a line of progress marks in a log) costs linear time, not quadratic.
const pathPattern = new RegExp(`(?<![\\w@.+-])(?:[\\w@.+-]{0,200}\\/){1,40}[\\w@+-][\\w@.+-]{0,200}|\\b[\\w@+-]{1,200}\\.(?:${knownExtensions})\\b`, 'g');
const fileExtensionPattern = new RegExp(`\\.(?:${knownExtensions})$`);
const dottedPattern = /\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b/g;

function pathMentions(text: string): string[] {
  return [...new Set(text.match(pathPattern) ?? [])].map((path) => path.replace(/[.,;:]+$/, ''));
}

/**
 * Dotted names (`tests.test_calc`, `pkg.mod.Class.method`) and each of their
 * prefixes of two or more parts, as module paths may be followed by a class
 * or function name. Names ending in a known file extension are paths, not modules.
 */
function dottedMentions(text: string): string[] {
  const found = new Set<string>();
  for (const dotted of text.match(dottedPattern) ?? []) {
    if (fileExtensionPattern.test(dotted)) continue;
    const parts = dotted.split('.');
    for (let length = parts.length; length >= 2; length -= 1) found.add(parts.slice(0, length).join('.'));
  }
  return [...found];
}

const stopWords = new Set(
  `the and for with that this from into when then than there their them they should would could must not are was were been being have has had
   use using used make makes made add adds added fix fixes fixed bug bugs code file files test tests testing error errors fail fails failed failing
   pass passes passed return returns returned value values new old all any each every some none null true false self this def class function
   const let var type import export default async await but also only just like more most other such can will may might into onto over under
   what which who whom whose why how where does did doing done get gets set sets its it's our your you via per see yet src lib libs spec`.split(/\s+/),
);

/**
 * Words worth looking for, each with whether it looks like code: words of
 * three or more characters that are not common English or keywords, from the
 * text with its paths taken out (they are matched as paths). Code-like means
 * snake_case, camelCase, with digits, dotted, backquoted, called or given
 * as a keyword argument (`floatfmt=".6f"`); test
 * names (`test_add_two`) also give their subject and its underscore
 * prefixes (`add_two`, `add`), which are code-like.
 */
function termsOf(text: string, testText: string): Map<string, boolean> {
  const terms = new Map<string, boolean>();
  const note = (term: string, codeLike: boolean) => {
    // A word longer than any name (a run of pytest's progress dots, a hash) is no term, and would make the search pattern too large.
    if (term.length < 3 || term.length > maxTermLength || stopWords.has(term.toLowerCase()) || /^_+$/.test(term)) return;
    if (terms.size < maxTerms || terms.has(term)) terms.set(term, codeLike || terms.get(term) === true);
  };
  const words = text.replace(pathPattern, ' ');
  for (const match of words.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) {
    const word = match[0];
    const before = words[match.index - 1] ?? '';
    const after = words[match.index + word.length] ?? '';
    // A keyword argument (`floatfmt=".6f"`) is code too; a comparison (`x == 1`) says nothing.
    const keywordArgument = after === '=' && words[match.index + word.length + 1] !== '=';
    note(word, /_|\d|[a-z][A-Z]/.test(word) || '.`'.includes(before) && before !== '' || '.`('.includes(after) && after !== '' || keywordArgument);
  }
  for (const name of testNamesOf(testText.split('\n'))) {
    const parts = name.replace(/^test_?/i, '').split('_').filter((part) => part !== '');
    for (let length = parts.length; length >= 1; length -= 1) note(parts.slice(0, length).join('_'), true);
  }
  return terms;
}

/** Function names of test ids: the identifiers that start with `test`. */
function testNamesOf(failingTests: readonly string[]): string[] {
  return failingTests.flatMap((id) => id.match(/\btest_?\w*/gi) ?? []).filter((name) => !/^tests?$/i.test(name));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** For each file that defines any of `terms`, the distinct terms it defines (lowercase, in order of first definition). */
function definitionsOfTerms(files: readonly RepoFile[], terms: readonly string[]): Map<number, string[]> {
  const found = new Map<number, string[]>();
  if (terms.length === 0) return found;
  const alternatives = [...new Set(terms.map((term) => term.toLowerCase()))].map(escapeRegExp).join('|');
  const pattern = new RegExp(`(?:^|[^\\w$.])(?:def|class|function\\*?|interface|type|enum|const|let|var|struct|fn|func|namespace)[ \\t]+(${alternatives})(?![\\w$])`, 'gi');
  files.forEach((file, fileIndex) => {
    const text = file.content.length > maxScannedCharacters ? file.content.slice(0, maxScannedCharacters) : file.content;
    let defined: string[] | undefined;
    for (const match of text.matchAll(pattern)) {
      const term = (match[1] ?? '').toLowerCase();
      defined ??= [];
      if (!defined.includes(term)) defined.push(term);
    }
    if (defined !== undefined) found.set(fileIndex, defined);
  });
  return found;
}

/** A word `rankFiles` looks for, and whether it looks like code (`parse_config`, `parseConfig`, `` `total` ``). */
export interface FocusTerm {
  readonly term: string;
  readonly codeLike: boolean;
}

/**
 * The words `rankFiles` looks for in a goal and focus (paths taken out),
 * code-like ones first, each once. For the lib's own use (`code-context`).
 */
export function focusTerms(goal: string, focus: RepoMapFocus = {}): FocusTerm[] {
  const testText = (focus.failingTests ?? []).join('\n');
  const terms = termsOf([goal, focus.errorText ?? '', testText].join('\n'), testText);
  return [...terms].sort(([, left], [, right]) => Number(right) - Number(left)).map(([term, codeLike]) => ({ term, codeLike }));
}

/**
 * 1-based lines of `content` (its first 256 KiB) where one of `terms`
 * appears as a whole word (a call, an import, a use), case-sensitive, at
 * most `limit` (default 12), sorted. The rarest terms' lines are taken
 * first: a name used twice says more about where to look than the
 * package's name in every import and comment. A test that uses the
 * function a goal names is found this way.
 */
export function termMentionLines(content: string, terms: readonly string[], limit = 12): number[] {
  if (terms.length === 0) return [];
  const pattern = new RegExp(`(?<![\\w$])(?:${[...new Set(terms)].map(escapeRegExp).join('|')})(?![\\w$])`, 'g');
  const text = content.length > maxScannedCharacters ? content.slice(0, maxScannedCharacters) : content;
  const linesOf = new Map<string, number[]>();
  let line = 1;
  let counted = 0;
  for (const match of text.matchAll(pattern)) {
    for (let next = text.indexOf('\n', counted); next >= 0 && next < match.index; next = text.indexOf('\n', counted)) {
      line += 1;
      counted = next + 1;
    }
    const lines = linesOf.get(match[0]) ?? [];
    if (lines[lines.length - 1] !== line) lines.push(line);
    linesOf.set(match[0], lines);
  }
  const chosen = new Set<number>();
  for (const lines of [...linesOf.values()].sort((left, right) => left.length - right.length)) {
    for (const mention of lines) {
      if (chosen.size >= limit) break;
      chosen.add(mention);
    }
  }
  return [...chosen].sort((left, right) => left - right);
}

/**
 * 1-based lines of `content` (its first 256 KiB) where one of `terms` is
 * defined (`def`, `class`, `function`, `const`, ... as `rankFiles` counts
 * them), case-insensitive, in file order, at most `limit` (default 12).
 */
export function termDefinitionLines(content: string, terms: readonly string[], limit = 12): number[] {
  if (terms.length === 0) return [];
  const alternatives = [...new Set(terms.map((term) => term.toLowerCase()))].map(escapeRegExp).join('|');
  const pattern = new RegExp(`(?:^|[^\\w$.])(?:def|class|function\\*?|interface|type|enum|const|let|var|struct|fn|func|namespace)[ \\t]+(?:${alternatives})(?![\\w$])`, 'gi');
  const text = content.length > maxScannedCharacters ? content.slice(0, maxScannedCharacters) : content;
  const lines: number[] = [];
  // Line breaks are counted once, up to each match in turn.
  let line = 1;
  let counted = 0;
  for (const match of text.matchAll(pattern)) {
    // The keyword's own line: the match may start with the character before it, a line break included.
    const at = match.index + (/^[^\w$.]/.test(match[0]) ? 1 : 0);
    for (let next = text.indexOf('\n', counted); next >= 0 && next < at; next = text.indexOf('\n', counted)) {
      line += 1;
      counted = next + 1;
    }
    if (lines[lines.length - 1] !== line) lines.push(line);
    if (lines.length >= limit) break;
  }
  return lines;
}
