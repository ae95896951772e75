// Repository-map build time for generated workspaces of 1,000, 10,000 and
// 20,000 files (the last about 50 MB, the largest workspace Ratchet takes),
// at prompt budgets of 2,000 and 8,000 tokens: the first build of a process
// (outlines parsed) and a rebuild (outlines from the extractor's cache, as in
// a later iteration), medians of several runs. Also the tokenizer's speed,
// which bounds anything that counts whole messages.
//
// Run with `npm run bench` (builds first) or
// `node libs/code-intel/bench/repo-map.mts [runs]` after `npx nx run @ratchet/code-intel:build`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/agent:bench -c smoke`,
// as CI runs it) builds the map of the 1,000-file workspace once per budget,
// only to show the bench still runs; its figures then mean nothing. A [runs]
// given still counts.
import { performance } from 'node:perf_hooks';
// The bench runs the built package (node cannot run the TypeScript sources
// directly), so it imports the package by name rather than by relative path.
import { countTokens } from '@ratchet/agent';
// eslint-disable-next-line @nx/enforce-module-boundaries
import { buildRepoMap, loadDefinitionExtractor, rankFiles } from '@ratchet/code-intel';
// eslint-disable-next-line @nx/enforce-module-boundaries
import type { RepoFile } from '@ratchet/code-intel';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const runs = Number(process.argv[2] ?? (smoke ? 1 : 5));
/** Files and lines of body per function of each generated workspace. */
const workspaces: readonly (readonly [number, number])[] = smoke
  ? [[1_000, 20]]
  : [
      [1_000, 20],
      [10_000, 20],
      [20_000, 90],
    ];

/** Python, TypeScript, tests and docs in nested packages; `padding` lines of body per function set the file size. */
function generatedRepo(count: number, padding: number): RepoFile[] {
  const body = Array.from({ length: padding }, (_, line) => `    total += ${line}  # accumulate step ${line}`).join('\n');
  return Array.from({ length: count }, (_, index) => {
    const directory = `pkg${index % 23}/area${index % 7}/part${index % 3}`;
    switch (index % 4) {
      case 0:
        return { path: `${directory}/module_${index}.py`, content: `import os\n\nLIMIT_${index} = ${index}\n\nclass Widget${index}:\n    def render(self, width: int) -> str:\n        total = 0\n${body}\n        return str(total)\n\ndef helper_${index}(a, b=2):\n    total = 0\n${body}\n    return a + b\n` };
      case 1:
        return { path: `${directory}/service-${index}.ts`, content: `export interface Options${index} {\n  readonly name: string;\n}\nexport const create${index} = (options: Options${index}): string => {\n${body.replaceAll('#', '//')}\n  return options.name;\n};\n` };
      case 2:
        return { path: `tests/${directory}/test_module_${index - 2}.py`, content: `from pkg${(index - 2) % 23}.area${(index - 2) % 7}.part${(index - 2) % 3}.module_${index - 2} import helper_${index - 2}\n\ndef test_helper():\n    assert helper_${index - 2}(1) == 3\n` };
      default:
        return { path: `docs/${directory}/notes-${index}.md`, content: `# Notes ${index}\n\n${body}\n` };
    }
  });
}

const median = (values: number[]) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? 0;
const round = (value: number) => Math.round(value * 10) / 10;

const results: Record<string, unknown>[] = [];
for (const [count, padding] of workspaces) {
  const files = generatedRepo(count, padding);
  const megabytes = files.reduce((sum, file) => sum + file.content.length, 0) / 1e6;
  const target = count - 4;
  const request = { files, goal: `Widget${target}.render returns the wrong width; fix helper_${target}`, focus: { failingTests: [`tests/pkg0/area0/part0/test_module_${target}.py::test_helper`] } };
  const rankMs: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    rankFiles(files, request.goal, request.focus);
    rankMs.push(performance.now() - started);
  }
  for (const budgetTokens of [2_000, 8_000]) {
    const firstMs: number[] = [];
    const rebuildMs: number[] = [];
    let shown = { tokens: 0, outlined: 0, included: 0 };
    for (let run = 0; run < runs; run += 1) {
      // A fresh extractor per run: its outline cache starts empty, as in a new process.
      const extractor = await loadDefinitionExtractor();
      let started = performance.now();
      const map = buildRepoMap({ ...request, budgetTokens, extractor });
      firstMs.push(performance.now() - started);
      started = performance.now();
      buildRepoMap({ ...request, budgetTokens, extractor });
      rebuildMs.push(performance.now() - started);
      if (map.tokens > budgetTokens) throw new Error(`map of ${map.tokens} tokens over the budget of ${budgetTokens}`);
      shown = { tokens: map.tokens, outlined: map.outlinedFiles.length, included: map.includedFiles.length };
    }
    results.push({ files: count, megabytes: round(megabytes), budgetTokens, rankMs: round(median(rankMs)), firstBuildMs: round(median(firstMs)), rebuildMs: round(median(rebuildMs)), ...shown });
  }
}

const text = generatedRepo(2_000, 20)
  .map((file) => file.content)
  .join('\n');
const tokenizeStarted = performance.now();
const tokens = countTokens(text);
const tokenizeMs = performance.now() - tokenizeStarted;

console.table(results);
console.log(`countTokens: ${round(text.length / 1e6)} MB, ${tokens} tokens in ${round(tokenizeMs)} ms (${round(text.length / 1e6 / (tokenizeMs / 1000))} MB/s)`);
console.log(JSON.stringify({ bench: 'repo-map', runs, results, tokenizer: { megabytes: round(text.length / 1e6), tokens, ms: round(tokenizeMs) } }));
