// Time to fit a role's prompt to its token budget (fitPrompt), per call, for
// a reflector-sized prompt (a goal, 60 lines of code, a 40-line test report,
// 80 lines of output: about 8 KB), side by side in one run:
//   1. far under the budget (16,000 tokens, the reflector's default): the
//      UTF-8 length settles that it fits, and no token is counted;
//   2. under the budget in tokens but over it in bytes: every section and
//      the rendered prompt are counted, the path every call took before;
//   3. over the budget: sections are shortened and counted again.
// Medians of several runs of many calls each, after a warm-up.
//
// Run with `npm run bench` (builds first) or
// `node libs/prompting/bench/prompt-budget.mts [runs]` after `npx nx run @ratchet/prompting:build`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/prompting:bench -c smoke`,
// as CI runs it) makes a few calls of each, only to show the bench still
// runs; its figures then mean nothing. A [runs] given still counts.
import { performance } from 'node:perf_hooks';
import { countTokens } from '@ratchet/agent';
// The bench runs the built package (node cannot run the TypeScript sources
// directly), so it imports the package by name rather than by relative path.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { cutText, fitGoal, fitPrompt, renderTemplate, type PromptSection, type RolePrompt } from '@ratchet/prompting';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const runs = Number(process.argv[2] ?? (smoke ? 1 : 7));
const calls = smoke ? 3 : 500;
const warmUp = smoke ? 0 : 200;

const prompt: RolePrompt = {
  system: 'You are the reflector of a coding agent: say why the tests failed and what to change. Language: {{language}}.',
  user: 'Goal: {{goal}}\n\nCode:\n{{files}}\n\nTest report:\n{{testReport}}\n\nOutput:\n{{stderr}}\n',
};
const lines = (count: number, label: string) => Array.from({ length: count }, (_, index) => `${label} line ${index}: expected add(${index}, 1) == ${index + 1}, got ${index - 1}`).join('\n');
const goal = 'make the failing tests of calc.py pass';
const files = lines(60, 'calc.py');
const report = lines(40, 'FAILED tests/test_calc.py');
const stderr = lines(80, 'pytest');
const sections: PromptSection[] = [
  { name: 'language', text: 'python', fixed: true },
  { name: 'goal', text: goal, fit: (tokens) => fitGoal(goal, tokens), weight: 2 },
  { name: 'files', text: files, weight: 3 },
  { name: 'testReport', text: report, weight: 2 },
  { name: 'stderr', text: stderr, fit: (tokens) => cutText(stderr, tokens, { label: 'the output', keep: 'end' }) },
];
const values = { language: 'python', goal, files, testReport: report, stderr };
const rendered = renderTemplate(prompt.system, values) + renderTemplate(prompt.user, values);
const tokens = countTokens(rendered) + 8;
const bytes = Buffer.byteLength(rendered, 'utf8') + 8;

const cases: [string, number][] = [
  ['far under the budget (16,000 tokens): settled by its length', 16_000],
  [`under the budget in tokens, over it in bytes (${Math.floor((tokens + bytes) / 2)}): counted`, Math.floor((tokens + bytes) / 2)],
  [`over the budget (${Math.floor(tokens / 2)} tokens): shortened`, Math.floor(tokens / 2)],
];

const median = (values: number[]) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? 0;
const perCall = new Map<string, number[]>();
for (let run = 0; run < runs; run += 1) {
  // Side by side: each run times every case in turn, so all see the same machine state.
  for (const [name, budget] of cases) {
    for (let call = 0; call < (run === 0 ? warmUp : 0); call += 1) fitPrompt(prompt, sections, budget, { budgetKey: 'reflector.promptBudgetTokens' });
    const started = performance.now();
    for (let call = 0; call < calls; call += 1) fitPrompt(prompt, sections, budget, { budgetKey: 'reflector.promptBudgetTokens' });
    perCall.set(name, [...(perCall.get(name) ?? []), (performance.now() - started) / calls]);
  }
}

console.log(`\nfitPrompt, a reflector prompt of ${bytes} bytes and ${tokens} tokens, median of ${runs} runs of ${calls} calls (ms per call)\n`);
console.log('| prompt | ms per call |\n|---|---|');
for (const [name] of cases) console.log(`| ${name} | ${median(perCall.get(name) ?? []).toFixed(3)} |`);
const [fast, counted] = cases.map(([name]) => median(perCall.get(name) ?? []));
console.log(`\ncounted / settled by length: ${((counted ?? 0) / Math.max(fast ?? 0, 1e-6)).toFixed(1)}x`);
