import { structuredPatch } from 'diff';
import type { DefinitionExtractor } from '@ratchet/code-intel';
import { buildRepoMap, focusTerms, looksMinified, rankFiles, termDefinitionLines, termMentionLines, type RankedFile, type RepoMapFocus } from '@ratchet/code-intel';
import { shareTokens, type PromptSection } from './prompt-budget';
import { countTokens } from '@ratchet/agent';

/** One file a role may show the model. */
export interface CodeFile {
  readonly path: string;
  readonly content: string;
  /** The file before the change, when known: its changed lines are lines that matter. `''` for a file the change added. */
  readonly base?: string;
  /** More 1-based lines that matter (a finding's line, say), beside the changed ones and those the focus's error text names. */
  readonly focusLines?: readonly number[];
}

/** What `codeContext` shows, before a budget is known. */
export interface CodeContextSource {
  readonly files: readonly CodeFile[];
  /** Ranks the files (see `rankFiles`) and names the terms whose definitions are worth showing. */
  readonly goal: string;
  /** Failing tests, error text (its `path:line` and `File "path", line n` references are lines that matter) and paths the plan names. */
  readonly focus?: RepoMapFocus;
  /** Outlines files for the map; without one the map lists paths only. */
  readonly extractor?: DefinitionExtractor;
  /**
   * What a file shown whole looks like, when not its content: the tester
   * shows interfaces (signatures, no bodies). Files seen through a view are
   * shown whole or cut at a line, never as excerpts of their content.
   */
  readonly view?: (file: CodeFile) => string;
  /** Unchanged lines shown around each line that matters. Default 3. */
  readonly contextLines?: number;
  /** Files shown whole or as excerpts at most; the others are in the map. Default 10. */
  readonly maxFiles?: number;
  /** Of a budget too small for every file, the part kept for the map when some files are not shown. Default 0.25. */
  readonly mapShare?: number;
}

/** The code of a prompt section, fitted to a budget. */
export interface CodeContext {
  readonly text: string;
  /** `countTokens(text)`; never more than the budget. */
  readonly tokens: number;
  /** Files shown whole (through the view, when there is one). */
  readonly wholeFiles: readonly string[];
  /** Files shown as excerpts (or cut, through a view). */
  readonly excerptedFiles: readonly string[];
  /** Files named in the map only. */
  readonly mappedFiles: readonly string[];
  /** Files in neither: the map ran out of room. */
  readonly omittedFiles: readonly string[];
}

/** A source's analysis, fitted to any budget by `fit`. */
export interface CodeContextBuilder {
  /** Tokens of every file shown whole; an estimate (an upper part of it) when that is far over any budget. */
  readonly tokens: number;
  /** The code in at most `budgetTokens` tokens; see `codeContext`. */
  fit(budgetTokens: number): CodeContext;
}

const defaultContextLines = 3;
const defaultMaxFiles = 10;
const defaultMapShare = 0.25;
/** A function or class up to this many lines is shown whole around a line that matters in it. */
const maxBlockLines = 60;
/** Only the start of a very large file is searched for the goal's terms (as `rankFiles` does). */
const maxScannedCharacters = 256 * 1024;
/** A file's whole text is counted when it is at most this long; longer ones are far over any prompt budget. */
const maxCountedCharacters = 512 * 1024;
/** Characters per token when estimating text too large to count (code is about 3 to 4). */
const estimatedCharactersPerToken = 3;
/** Tokens of the blank line between two files, counted generously. */
const separatorTokens = 2;
/** Fewer tokens than this for one file show too little of it to help; the file goes to the map. */
const minFileTokens = 80;

/**
 * The code that matters for a role's prompt, fitted to a budget: every file
 * whole while they all fit (a greenfield task's handful of files; a file
 * with lines that matter is numbered and they are marked `>`); else, in
 * order of relevance (`rankFiles` over goal and focus, files with lines
 * that matter first), up to `maxFiles` files, each shown as its share
 * allows: whole when that is not much more than its excerpt, else as an
 * excerpt: the lines that matter (the changed lines of a file with a
 * `base`, the lines the focus's error text names, `focusLines`, and in
 * other relevant files the definitions of the goal's terms and the uses
 * of its code-like terms: a test calling the function it names), each inside
 * its enclosing function or class when that is short (at most 60 lines),
 * with `contextLines` of context, numbered, and every gap marked with the
 * lines it leaves out. An excerpt over its share loses context first, then
 * whole regions from its end, each named in a note; it is never cut inside
 * a region but the first, when that alone is too large (then from its
 * start, the rest named). A file with a share too small to show anything
 * is left to the map. Room no file asked for shows a file whole after all
 * when it takes at most a third of the room. A repository map
 * (`buildRepoMap`) of the files not shown takes the rest of the budget.
 * The analysis (ranking, diffs, counts) is done once here; `fit` renders.
 */
export function codeContext(source: CodeContextSource): CodeContextBuilder {
  const files = source.files;
  const views = fileViews(source);
  const total = estimateWhole(files, views.whole);
  let analysis: Analysis | undefined;
  return {
    tokens: total.tokens,
    fit(budgetTokens) {
      const budget = Math.max(0, Math.floor(budgetTokens));
      if (files.length === 0) return emptyContext('(none)');
      if (total.text !== undefined && total.tokens <= budget) {
        return { text: total.text, tokens: total.tokens, wholeFiles: files.map((file) => file.path), excerptedFiles: [], mappedFiles: [], omittedFiles: [] };
      }
      analysis ??= analyse(source, views);
      return fitAnalysis(source, analysis, budget);
    },
  };
}

/** How each file is seen, each worked out once, when first asked for. */
interface FileViews {
  /** The lines shown of the file: its content's, or its view's. */
  readonly lines: (file: CodeFile) => readonly string[];
  /** Lines that matter (none through a view), sorted. */
  readonly marks: (file: CodeFile) => readonly number[];
  /** Whether the file has lines that matter, without working them out. */
  readonly hasMarks: (file: CodeFile) => boolean;
  /** The file shown whole: numbered with its lines that matter marked when it has some, else as `formatFiles` shows it. */
  readonly whole: (file: CodeFile) => string;
}

function fileViews(source: CodeContextSource): FileViews {
  const viewed = source.view !== undefined;
  const references = lineReferences([source.focus?.errorText ?? '', ...(source.focus?.failingTests ?? [])].join('\n'), source.files.map((file) => file.path));
  const contentLines = memoize((file: CodeFile) => splitLines(file.content));
  const lines = memoize((file: CodeFile) => (source.view === undefined ? contentLines(file) : splitLines(source.view(file))));
  const hasMarks = (file: CodeFile) => !viewed && ((file.focusLines?.length ?? 0) > 0 || references.has(file.path) || (file.base !== undefined && file.base !== file.content));
  const marks = memoize((file: CodeFile): readonly number[] => (hasMarks(file) ? marksOf(file, contentLines(file).length, references.get(file.path) ?? []) : []));
  const whole = memoize((file: CodeFile) => {
    const marked = marks(file);
    if (marked.length === 0) return wholeBlock(file.path, source.view === undefined ? file.content : source.view(file));
    const shown = lines(file);
    return renderExcerpt(file.path, shown, shown.length === 0 ? [] : [{ start: 1, end: shown.length }], new Set(marked), []);
  });
  return { lines, marks, hasMarks, whole };
}

/**
 * Files as a `fitPrompt` section named `name`: `codeContext(source)`
 * fitted to the section's share. `weight` is its claim on the budget beside
 * the other sections; default 3 (code is what most prompts are about).
 */
export function codeSection(name: string, source: CodeContextSource, weight = 3): PromptSection {
  const code = codeContext(source);
  return { name, tokens: code.tokens, fit: (tokens) => code.fit(tokens).text, weight };
}

/** `codeContext(request).fit(request.budgetTokens)`. */
export function buildCodeContext(request: CodeContextSource & { readonly budgetTokens: number }): CodeContext {
  return codeContext(request).fit(request.budgetTokens);
}

/** 1-based line references in `text` (`File "x.py", line 3`, `src/x.ts:12:5`, `x.py:7: in f`) to files of `paths`, per path, in order of appearance. */
export function lineReferences(text: string, paths: readonly string[]): Map<string, number[]> {
  const byName = new Map<string, string[]>();
  for (const path of paths) {
    const name = path.slice(path.lastIndexOf('/') + 1);
    byName.set(name, [...(byName.get(name) ?? []), path]);
  }
  const found = new Map<string, number[]>();
  for (const match of text.matchAll(lineReferencePattern)) {
    const mention = normalizePath(match[1] ?? match[3] ?? '');
    const line = Number(match[2] ?? match[4]);
    if (mention === '' || !Number.isSafeInteger(line) || line < 1) continue;
    const name = mention.slice(mention.lastIndexOf('/') + 1);
    for (const path of byName.get(name) ?? []) {
      const own = normalizePath(path);
      if (own !== mention && !mention.endsWith(`/${own}`) && !own.endsWith(`/${mention}`)) continue;
      const lines = found.get(path) ?? [];
      if (!lines.includes(line)) lines.push(line);
      found.set(path, lines);
    }
  }
  return found;
}

const sourceExtensions = 'py|pyi|js|mjs|cjs|jsx|ts|mts|cts|tsx';
// Python tracebacks (`File "/work/app/x.py", line 12, in f`), and `path:line` as pytest, node and compilers print it.
// A path starts where a word does, and quantifiers are bounded, so a long line without a path costs linear time.
const lineReferencePattern = new RegExp(`File "([^"\\n]{1,500})", line (\\d{1,7})|(?<![\\w.@+~\\\\/-])((?:[\\w.@+~-]{0,100}[\\\\/]){0,40}[\\w@+~-][\\w.@+~-]{0,150}\\.(?:${sourceExtensions})):(\\d{1,7})`, 'g');

function normalizePath(path: string): string {
  return path.replace(/\\/g, '/').replace(/^file:\/\//, '').replace(/^(\.\/)+/, '').replace(/^\/+/, '');
}

interface Candidate {
  readonly file: CodeFile;
  /** The lines shown: the file's, or its view's. */
  readonly lines: readonly string[];
  /** Lines that matter (changed, named by the failure, given), sorted. */
  readonly marks: readonly number[];
  /** Definitions of the goal's terms and the lines using its code-like terms, sorted; only where there are no marks. */
  readonly definitions: readonly number[];
  /** The file shown whole, and its tokens (Infinity when far over any budget). */
  readonly whole: string;
  readonly wholeTokens: number;
  /** Tokens of its fullest excerpt; Infinity without one. */
  readonly excerptTokens: number;
  readonly weight: number;
}

interface Analysis {
  readonly ranking: readonly RankedFile[];
  readonly candidates: readonly Candidate[];
}

function analyse(source: CodeContextSource, views: FileViews): Analysis {
  const byPath = new Map(source.files.map((file) => [file.path, file]));
  const ranking = rankFiles(source.files, source.goal, source.focus);
  const viewed = source.view !== undefined;
  const maxFiles = source.maxFiles ?? defaultMaxFiles;
  const terms = focusTerms(source.goal, source.focus);
  const codeTerms = terms.filter((term) => term.codeLike).map((term) => term.term);
  // Files with lines that matter first, then the others the ranking finds relevant, then those that use a
  // code-like term of the goal (a test calling the function it names), each in rank order; a cheap pass over every file.
  const marked: CodeFile[] = [];
  const relevant: CodeFile[] = [];
  const using: CodeFile[] = [];
  const usePattern = codeTerms.length === 0 ? undefined : new RegExp(`(?<![\\w$])(?:${codeTerms.map(escapeRegExp).join('|')})(?![\\w$])`);
  for (const ranked of ranking) {
    const file = byPath.get(ranked.path);
    if (file === undefined) continue;
    if (views.hasMarks(file) && views.marks(file).length > 0) marked.push(file);
    // A minified bundle holds every word of the goal and shows nothing a model can read: unless it changed, it stays in the map.
    else if (looksMinified(file.content)) continue;
    else if (ranked.score > 0) relevant.push(file);
    else if (usePattern !== undefined && marked.length + relevant.length + using.length < maxFiles && usePattern.test(file.content.slice(0, maxScannedCharacters))) using.push(file);
  }
  const contextLines = source.contextLines ?? defaultContextLines;
  const allTerms = terms.map((term) => term.term);
  const candidates = [...marked, ...relevant, ...using].slice(0, maxFiles).map((file): Candidate => {
    const lines = views.lines(file);
    const marks = views.marks(file);
    let definitions: number[] = [];
    if (!viewed && marks.length === 0) {
      // The definitions of the goal's terms, and the code that uses its code-like terms (inside its function when
      // that is short): the fix is often in a helper the goal never names (`_format` for a goal about `floatfmt=`).
      definitions = [...new Set([...termDefinitionLines(file.content, allTerms), ...termMentionLines(file.content, codeTerms)])].sort((left, right) => left - right);
    }
    const whole = views.whole(file);
    const anchors = marks.length > 0 ? marks : definitions;
    const excerptTokens = anchors.length === 0 ? Number.POSITIVE_INFINITY : countTokens(renderExcerpt(file.path, lines, regionsAt(lines, anchors, 0, contextLines), new Set(marks), []));
    return {
      file,
      lines,
      marks,
      definitions,
      whole,
      wholeTokens: whole.length <= maxCountedCharacters ? countTokens(whole) : Number.POSITIVE_INFINITY,
      excerptTokens,
      // A file of lines that matter is what the prompt is about: it gets twice the share of one that is merely relevant.
      weight: marks.length > 0 ? 2 : 1,
    };
  });
  return { ranking, candidates };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The file's lines that matter: changed against its base, named by the error text, or given; sorted, within the file. */
function marksOf(file: CodeFile, lineCount: number, referenced: readonly number[]): number[] {
  const marks = new Set<number>([...(file.focusLines ?? []), ...referenced]);
  if (file.base !== undefined && file.base !== file.content) for (const line of changedLines(file.base, file.content)) marks.add(line);
  return [...marks].filter((line) => Number.isSafeInteger(line) && line >= 1 && line <= Math.max(lineCount, 1)).sort((left, right) => left - right);
}

/** 1-based lines of `after` that differ from `before`; where lines were only removed, the line after the removal. */
function changedLines(before: string, after: string): number[] {
  const patch = structuredPatch('a', 'b', before, after, undefined, undefined, { context: 0 });
  const lines: number[] = [];
  for (const hunk of patch.hunks) {
    let line = hunk.newStart;
    let added = false;
    for (const text of hunk.lines) {
      if (text.startsWith('+')) {
        lines.push(line);
        line += 1;
        added = true;
      } else if (text.startsWith(' ')) line += 1;
    }
    if (!added) lines.push(Math.max(1, hunk.newStart + (hunk.newLines === 0 ? 1 : 0)));
  }
  return lines;
}

interface ShownFile {
  readonly path: string;
  readonly text: string;
  readonly tokens: number;
  readonly whole: boolean;
}

function fitAnalysis(source: CodeContextSource, analysis: Analysis, budget: number): CodeContext {
  const count = source.files.length;
  const contextLines = source.contextLines ?? defaultContextLines;
  const viewed = source.view !== undefined;
  const intro = (shown: readonly ShownFile[]) => {
    if (shown.length === 0) return `(${count} files, more than the prompt can hold: a map of them follows, most relevant first)`;
    const whole = shown.filter((file) => file.whole).length;
    const others = shown.length < count ? ', the others only in the map below' : '';
    return `(${count} file${count === 1 ? '' : 's'}: ${whole} shown whole, ${shown.length - whole} ${viewed ? 'cut short' : 'as excerpts around the lines that matter'}${others})`;
  };
  const mapHeader = 'Map of the other files (their definitions, most relevant first):';
  const reserve = countTokens(`(${count} files: ${count} shown whole, ${count} as excerpts around the lines that matter, the others only in the map below)`) + countTokens(mapHeader) + 8;
  const codeRoom = Math.max(0, budget - reserve - Math.floor(budget * (source.mapShare ?? defaultMapShare)));

  // Too small a share shows nothing useful: the least relevant file goes to the map until every share is worth it.
  let candidates = [...analysis.candidates];
  let shares = shareFiles(candidates, codeRoom);
  const starved = () => shares.some((share, index) => share < Math.min(minFileTokens, needOf(candidates[index] as Candidate)));
  while (candidates.length > 0 && starved()) {
    candidates = candidates.slice(0, -1);
    shares = shareFiles(candidates, codeRoom);
  }
  const shown: ShownFile[] = [];
  // What each file leaves of its share goes to the next. The room no file asked for shows a file whole that is
  // not too large for it (a third of the room at most), most relevant first; the rest goes to the map.
  let spare = codeRoom - shares.reduce((sum, share) => sum + share, 0);
  let granted = 0;
  let used = 0;
  candidates.forEach((candidate, index) => {
    granted += shares[index] ?? 0;
    const own = granted - used - separatorTokens;
    const upgrade = candidate.wholeTokens > own && candidate.wholeTokens <= own + spare && candidate.wholeTokens <= codeRoom / 3;
    const file = showFile(candidate, upgrade ? own + spare : own, contextLines, viewed);
    if (file === undefined) return;
    shown.push(file);
    used += file.tokens + separatorTokens;
    if (file.tokens > own) {
      spare -= file.tokens - own;
      granted += file.tokens - own;
    }
  });

  let mapBudget = budget - reserve - used;
  for (let round = 0; round < 8; round += 1) {
    const shownPaths = new Set(shown.map((file) => file.path));
    const rest = source.files.filter((file) => !shownPaths.has(file.path));
    const map =
      rest.length === 0 || mapBudget <= 0
        ? undefined
        : buildRepoMap({
            files: rest,
            goal: source.goal,
            ...(source.focus === undefined ? {} : { focus: source.focus }),
            budgetTokens: mapBudget,
            ranking: analysis.ranking.filter((ranked) => !shownPaths.has(ranked.path)),
            ...(source.extractor === undefined ? {} : { extractor: source.extractor }),
          });
    const mapText = map === undefined || map.text === '' ? '' : shown.length === 0 ? map.text : `${mapHeader}\n${map.text}`;
    const unmapped = mapText === '' ? rest.length : 0;
    const tail = unmapped > 0 ? `(${unmapped} more file${unmapped === 1 ? '' : 's'} not shown: over the prompt budget)` : '';
    const text = [intro(shown), ...shown.map((file) => file.text), mapText, tail].filter((part) => part !== '').join('\n\n');
    const tokens = countTokens(text);
    if (tokens <= budget) {
      const mapped = new Set(map?.includedFiles ?? []);
      return {
        text,
        tokens,
        wholeFiles: shown.filter((file) => file.whole).map((file) => file.path),
        excerptedFiles: shown.filter((file) => !file.whole).map((file) => file.path),
        mappedFiles: rest.filter((file) => mapped.has(file.path)).map((file) => file.path),
        omittedFiles: rest.filter((file) => !mapped.has(file.path)).map((file) => file.path),
      };
    }
    // Joining counts a little more than the parts: the map gives it up, or else the last file shown.
    if (mapText !== '') mapBudget -= tokens - budget + 8;
    else if (shown.length > 0) mapBudget += (shown.pop()?.tokens ?? 0) - (tokens - budget);
    else break;
  }
  const fallback = `(${count} files, not shown: over the prompt budget)`;
  const text = countTokens(fallback) <= budget ? fallback : '';
  return { ...emptyContext(text), omittedFiles: source.files.map((file) => file.path) };
}

function shareFiles(candidates: readonly Candidate[], room: number): number[] {
  return shareTokens(
    candidates.map((candidate) => Math.min(needOf(candidate), room)),
    room,
    candidates.map((candidate) => candidate.weight),
  );
}

/** Tokens of a file's ideal form, with the blank line after it. */
function needOf(candidate: Candidate): number {
  return Math.min(candidate.wholeTokens, preferredExcerpt(candidate)) + separatorTokens;
}

/** A file's ideal form: whole when it is not much more than its fullest excerpt (or it has none). */
function preferredExcerpt(candidate: Candidate): number {
  if (!Number.isFinite(candidate.excerptTokens)) return candidate.wholeTokens;
  return candidate.wholeTokens <= candidate.excerptTokens * 1.5 ? candidate.wholeTokens : candidate.excerptTokens;
}

/** The file in at most `share` tokens: whole, else its best excerpt (or its start, through a view or without lines that matter); undefined when nothing useful fits. */
function showFile(candidate: Candidate, share: number, contextLines: number, viewed: boolean): ShownFile | undefined {
  const { file, lines } = candidate;
  if (candidate.wholeTokens <= share) return { path: file.path, text: candidate.whole, tokens: candidate.wholeTokens, whole: true };
  const anchors = candidate.marks.length > 0 ? candidate.marks : candidate.definitions;
  const marked = new Set(candidate.marks);
  if (!viewed && anchors.length > 0) {
    for (const level of [0, 1, 2] as const) {
      const text = renderExcerpt(file.path, lines, regionsAt(lines, anchors, level, contextLines), marked, []);
      const tokens = countTokens(text);
      if (tokens <= share) return { path: file.path, text, tokens, whole: false };
    }
    // Whole regions go from the end, each named, until the rest fits.
    const regions = regionsAt(lines, anchors, 2, contextLines);
    for (let kept = regions.length - 1; kept >= 1; kept -= 1) {
      const text = renderExcerpt(file.path, lines, regions.slice(0, kept), marked, regions.slice(kept));
      const tokens = countTokens(text);
      if (tokens <= share) return { path: file.path, text, tokens, whole: false };
    }
    const first = regions[0];
    return first === undefined ? undefined : cutRegion(file.path, lines, first, marked, regions.slice(1), share);
  }
  // Through a view, or a relevant file without lines that matter: its start.
  return cutRegion(file.path, lines, { start: 1, end: lines.length }, marked, [], share);
}

/** `region` shown from its start as far as `share` allows, the rest of it and `dropped` named in notes. */
function cutRegion(path: string, lines: readonly string[], region: Region, marked: ReadonlySet<number>, dropped: readonly Region[], share: number): ShownFile | undefined {
  let low = region.start;
  let high = region.end;
  let best: ShownFile | undefined;
  // The longest start of the region that fits, by bisection on its last line.
  while (low <= high) {
    const end = Math.floor((low + high) / 2);
    const cut = end < region.end ? [{ start: end + 1, end: region.end }] : [];
    const text = renderExcerpt(path, lines, [{ start: region.start, end }], marked, [...cut, ...dropped]);
    const tokens = countTokens(text);
    if (tokens <= share) {
      best = { path, text, tokens, whole: false };
      low = end + 1;
    } else high = end - 1;
  }
  return best;
}

interface Region {
  readonly start: number;
  readonly end: number;
}

/**
 * Regions around `anchors` (sorted 1-based lines), merged where they touch.
 * Level 0: each run of anchors inside its enclosing function or class when
 * that is at most `maxBlockLines` long, else the run with `contextLines`
 * around it and its enclosing header; level 1: the run with `contextLines`
 * and its header; level 2: the run with one line around it and its header.
 */
function regionsAt(lines: readonly string[], anchors: readonly number[], level: 0 | 1 | 2, contextLines: number): Region[] {
  const context = level === 2 ? Math.min(1, contextLines) : contextLines;
  const regions: Region[] = [];
  for (const run of runsOf(anchors)) {
    const block = level === 0 ? enclosingBlock(lines, run.start, run.end) : undefined;
    if (block !== undefined) {
      regions.push({ start: Math.max(1, block.start - (block.start === run.start ? context : 0)), end: Math.min(lines.length, block.end + (block.end === run.end ? context : 0)) });
      continue;
    }
    const header = headerAbove(lines, run.start);
    if (header !== undefined && header < run.start - context) regions.push({ start: header, end: header });
    regions.push({ start: Math.max(1, run.start - context), end: Math.min(lines.length, run.end + context) });
  }
  return mergeRegions(regions);
}

/** Consecutive anchors (and those one line apart) as runs. */
function runsOf(anchors: readonly number[]): Region[] {
  const runs: Region[] = [];
  for (const line of anchors) {
    const last = runs[runs.length - 1];
    if (last !== undefined && line <= last.end + 2) runs[runs.length - 1] = { start: last.start, end: Math.max(last.end, line) };
    else runs.push({ start: line, end: line });
  }
  return runs;
}

function mergeRegions(regions: readonly Region[]): Region[] {
  const sorted = [...regions].sort((left, right) => left.start - right.start || left.end - right.end);
  const merged: Region[] = [];
  for (const region of sorted) {
    const last = merged[merged.length - 1];
    // A gap of one line would cost as much as its marker: it is shown.
    if (last !== undefined && region.start <= last.end + 2) merged[merged.length - 1] = { start: last.start, end: Math.max(last.end, region.end) };
    else merged.push(region);
  }
  return merged;
}

// A line that opens a definition: Python def/class, JS/TS functions, classes, interfaces, enums, arrow functions in
// a const, methods (a name, parameters, a body brace; not if/for/while/...), Go and Rust functions.
const headerPattern =
  /^\s*(?:(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|class|function\*?)\s*[\w$]|(?:export\s+)?(?:declare\s+)?(?:abstract\s+)?(?:class|interface|enum|namespace|module)\s+[\w$]|(?:export\s+)?(?:const|let|var)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[\w$]+\s*=>)|(?:(?:public|private|protected|static|readonly|async|override|get|set)\s+)*(?!(?:if|for|while|switch|catch|return|else|do|try|with|function|new|await|typeof)\b)[\w$]+\s*(?:<[^>]*>)?\([^;]*\)\s*(?::\s*[^{;]+)?\{\s*$|(?:pub\s+)?(?:fn|func)\s+[\w$(])/;

function indentOf(line: string): number {
  let width = 0;
  for (const character of line) {
    if (character === ' ') width += 1;
    else if (character === '\t') width += 4;
    else break;
  }
  return width;
}

const isBlank = (line: string | undefined) => line === undefined || line.trim() === '';

/** The nearest definition header above `line` (or on it) that encloses it, by indentation; undefined at module level. */
function headerAbove(lines: readonly string[], line: number, limit = 400): number | undefined {
  let indent = Number.POSITIVE_INFINITY;
  for (let index = line; index >= 1 && index > line - limit; index -= 1) {
    const text = lines[index - 1];
    if (text === undefined || isBlank(text)) continue;
    const own = indentOf(text);
    if (index === line) {
      if (headerPattern.test(text)) return index;
      indent = own;
      continue;
    }
    if (own >= indent) continue;
    if (headerPattern.test(text)) return index;
    // An enclosing if/for/with/object: keep looking for what encloses it.
    indent = own;
    if (own === 0) return undefined;
  }
  return undefined;
}

/** The function or class around lines `start`-`end` (with its decorators), when it holds them all and is at most `maxBlockLines` long. */
function enclosingBlock(lines: readonly string[], start: number, end: number): Region | undefined {
  const header = headerAbove(lines, start);
  if (header === undefined) return undefined;
  const headerIndent = indentOf(lines[header - 1] ?? '');
  let last = header;
  for (let index = header + 1; index <= lines.length && index - header <= maxBlockLines; index += 1) {
    const text = lines[index - 1] ?? '';
    if (isBlank(text)) continue;
    const own = indentOf(text);
    if (own > headerIndent) {
      last = index;
      continue;
    }
    // A closing bracket at the header's indentation ends its body, or closes a signature that goes on (`) -> int:`, `) {`).
    if (own === headerIndent && /^\s*[)\]}]/.test(text)) {
      last = index;
      if (/[:{]\s*$/.test(text)) continue;
    }
    break;
  }
  let first = header;
  while (first > 1 && /^\s*@/.test(lines[first - 2] ?? '') && indentOf(lines[first - 2] ?? '') === headerIndent) first -= 1;
  if (last < end || last - first + 1 > maxBlockLines) return undefined;
  return { start: first, end: last };
}

/**
 * An excerpt: the header, then each region's lines numbered (lines that
 * matter marked `>`), gaps marked with the lines they leave out, and the
 * regions `dropped` for the budget named at the end.
 */
function renderExcerpt(path: string, lines: readonly string[], regions: readonly Region[], marked: ReadonlySet<number>, dropped: readonly Region[]): string {
  const width = String(lines.length).length;
  const out: string[] = [];
  let shown = 0;
  let anyMarked = false;
  let next = 1;
  for (const region of regions) {
    if (region.start > next) out.push(`${' '.repeat(width)} ⋮ lines ${span(next, region.start - 1)} not shown`);
    for (let line = region.start; line <= region.end; line += 1) {
      const isMarked = marked.has(line);
      anyMarked ||= isMarked;
      out.push(`${String(line).padStart(width)} ${isMarked ? '>' : '|'} ${lines[line - 1] ?? ''}`);
      shown += 1;
    }
    next = region.end + 1;
  }
  if (next <= lines.length) out.push(`${' '.repeat(width)} ⋮ lines ${span(next, lines.length)} not shown`);
  const marks = anyMarked ? '; > marks the lines that matter' : '';
  const header = shown === lines.length ? `--- ${path} (${lines.length} lines, numbered${marks})` : `--- ${path} (excerpt: ${shown} of ${lines.length} lines${marks})`;
  const note = dropped.length === 0 ? [] : [`[… over the prompt budget, not shown: lines ${dropped.map((region) => span(region.start, region.end)).join(', ')} of ${path}, around lines that matter]`];
  return [header, '```', ...out, '```', ...note].join('\n');
}

function span(start: number, end: number): string {
  return start === end ? String(start) : `${start}-${end}`;
}

/** A file shown whole, as `formatFiles` shows it. */
function wholeBlock(path: string, content: string): string {
  return `--- ${path}\n\`\`\`\n${content}\n\`\`\``;
}

/** Every file whole, and its tokens; only an estimate (and no text) when far over any budget. */
function estimateWhole(files: readonly CodeFile[], wholeText: (file: CodeFile) => string): { readonly text?: string; readonly tokens: number } {
  if (files.length === 0) return { text: '(none)', tokens: 1 };
  let characters = 0;
  const blocks: string[] = [];
  for (const file of files) {
    const block = wholeText(file);
    characters += block.length + 2;
    if (characters > maxCountedCharacters) {
      const rest = files.slice(blocks.length + 1).reduce((sum, other) => sum + other.content.length + other.path.length + 12, 0);
      return { tokens: Math.ceil((characters + rest) / estimatedCharactersPerToken) };
    }
    blocks.push(block);
  }
  const text = blocks.join('\n\n');
  return { text, tokens: countTokens(text) };
}

function emptyContext(text: string): CodeContext {
  return { text, tokens: countTokens(text), wholeFiles: [], excerptedFiles: [], mappedFiles: [], omittedFiles: [] };
}

function splitLines(content: string): string[] {
  if (content === '') return [];
  const lines = content.split('\n');
  if (content.endsWith('\n')) lines.pop();
  return lines;
}

function memoize<T extends object, R>(compute: (input: T) => R): (input: T) => R {
  const cache = new WeakMap<T, R>();
  return (input) => {
    if (cache.has(input)) return cache.get(input) as R;
    const result = compute(input);
    cache.set(input, result);
    return result;
  };
}
