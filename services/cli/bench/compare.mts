// Loop overhead of two commits side by side in one run: this checkout and a
// base commit (default HEAD~1; RATCHET_BENCH_BASE=<commit> or the first
// argument picks another, e.g. the commit an issue measured).
//
// The base is checked out in a temporary git worktree with its own
// `npm install` and build, and this checkout's benches
// (services/cli/bench/loop.mts, embedded; distributed.mts, every service its
// own process) run on each in turns, round after round, so both sides are
// measured by the same instrument on the same machine under the same load
// (the bench files are copied into the worktree; a base too old for them
// fails with the bench's error). Each run's p50 is read from the row the
// bench prints ("loop overhead per iteration" / "orchestration overhead per
// iteration"); the table gives the median over the rounds of each side's p50
// and the ratio new / base. The overhead leaves the test job out; where the
// bench also prints the whole iteration with the sandbox ("whole iteration",
// the embedded one), a second table compares that, so work moved into the
// test job (Bandit's scan, for one) shows as moved, not as saved.
//
// Run: `node services/cli/bench/compare.mts [base] [rounds] [tasks]` after
// `npm run build` (defaults: HEAD~1, 3 rounds, 5 tasks a run).
// Smoke run: RATCHET_BENCH_SMOKE=1 (as CI runs it, right after the benches
// themselves) runs the embedded bench once at its smoke size in this checkout
// and reads it as both sides, without a worktree: it shows the run and the
// parsing still work; its figures mean nothing.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const repo = path.resolve(import.meta.dirname, '../../..');
const base = process.argv[2] ?? process.env['RATCHET_BENCH_BASE'] ?? 'HEAD~1';
const rounds = Number(process.argv[3] ?? (smoke ? 1 : 3));
const tasks = process.argv[4] ?? (smoke ? undefined : '5');

const allBenches: readonly { name: string; file: string; row: string; goal: number; wholeRow?: string }[] = [
  { name: 'embedded', file: 'services/cli/bench/loop.mts', row: 'loop overhead per iteration', goal: 20, wholeRow: 'whole iteration' },
  { name: 'distributed', file: 'services/cli/bench/distributed.mts', row: 'orchestration overhead per iteration', goal: 30 },
];
const benches = smoke ? allBenches.slice(0, 1) : allBenches;

const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

/** A checkout of `commit` with its dependencies installed and built, and how to remove it. */
function checkoutOf(commit: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ratchet-compare-'));
  const remove = () => {
    spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: repo });
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    git('worktree', 'add', '--detach', dir, commit);
    const step = (what: string, command: string, args: string[]) => {
      console.error(`compare: ${what} in the ${commit} worktree`);
      const result = spawnSync(command, args, { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
      if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed in the worktree of ${commit} (exit ${result.status})`);
    };
    step('npm install', 'npm', ['install', '--no-audit', '--no-fund', '--loglevel=error']);
    step('build', process.execPath, ['node_modules/nx/dist/bin/nx.js', 'run-many', '-t', 'build', '--outputStyle=static']);
    for (const bench of allBenches) copyFileSync(path.join(repo, bench.file), path.join(dir, bench.file));
    return { dir, remove };
  } catch (error) {
    remove();
    throw error;
  }
}

/** Runs one checkout's bench and reads the p50 of its overhead row and, when it has one, of its whole-iteration row, ms. */
function p50sOf(dir: string, bench: (typeof allBenches)[number]): { overhead: number; whole?: number } {
  if (!existsSync(path.join(dir, bench.file))) throw new Error(`${bench.file} is not in ${dir}`);
  const args = [bench.file, ...(tasks === undefined ? [] : [tasks])];
  const result = spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8', maxBuffer: 64 << 20, env: process.env });
  if (result.status !== 0) throw new Error(`${bench.file} in ${dir} exited ${result.status}:\n${result.stderr.slice(-4_000)}`);
  const p50Of = (row: string) => {
    const line = result.stdout.split('\n').find((text) => text.startsWith(`| ${row}`));
    const p50 = Number(line?.split('|')[3]?.trim());
    if (!Number.isFinite(p50)) throw new Error(`no "${row}" row with a p50 in the output of ${bench.file} in ${dir}`);
    return p50;
  };
  return { overhead: p50Of(bench.row), ...(bench.wholeRow === undefined ? {} : { whole: p50Of(bench.wholeRow) }) };
}

const median = (values: number[]) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? Number.NaN;

const baseCommit = smoke ? git('rev-parse', '--short', 'HEAD') : git('rev-parse', '--short', `${base}^{commit}`);
const headCommit = git('rev-parse', '--short', 'HEAD');
const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
const baseCheckout = smoke ? { dir: repo, remove: () => undefined } : checkoutOf(baseCommit);
type Runs = { base: number[]; head: number[] };
const results = new Map<string, Runs>(benches.map((bench) => [bench.name, { base: [], head: [] }]));
const wholes = new Map<string, Runs>(benches.filter((bench) => bench.wholeRow !== undefined).map((bench) => [bench.name, { base: [], head: [] }]));
try {
  for (let round = 1; round <= rounds; round += 1) {
    for (const bench of benches) {
      const side = results.get(bench.name)!;
      const whole = wholes.get(bench.name);
      // Alternate which side goes first, so neither always runs on a machine the other just warmed.
      const order = round % 2 === 1 ? (['base', 'head'] as const) : (['head', 'base'] as const);
      const record = (which: keyof Runs, p50s: { overhead: number; whole?: number }) => {
        side[which].push(p50s.overhead);
        if (whole !== undefined && p50s.whole !== undefined) whole[which].push(p50s.whole);
      };
      if (smoke) {
        const p50s = p50sOf(repo, bench);
        record('base', p50s);
        record('head', p50s);
      } else for (const which of order) record(which, p50sOf(which === 'base' ? baseCheckout.dir : repo, bench));
      console.error(`compare: round ${round}/${rounds} ${bench.name}: base ${side.base.at(-1)} ms, new ${side.head.at(-1)} ms`);
    }
  }
} finally {
  baseCheckout.remove();
}

console.log(`\nLoop overhead per iteration, p50 in ms, median of ${rounds} round(s) run in turns: base ${baseCommit}, new ${headCommit}${dirty ? ' (with uncommitted changes)' : ''}\n`);
console.log('| mode | base | new | new / base | goal | every round (base / new) |\n|---|---|---|---|---|---|');
for (const bench of benches) {
  const side = results.get(bench.name)!;
  const [before, after] = [median(side.base), median(side.head)];
  const each = side.base.map((value, index) => `${value} / ${side.head[index]}`).join(', ');
  console.log(`| ${bench.name} | ${before.toFixed(1)} | ${after.toFixed(1)} | ${(after / before).toFixed(2)}x | < ${bench.goal} ms: ${after < bench.goal ? 'met' : 'NOT met'} | ${each} |`);
}
if (wholes.size > 0) {
  console.log(`\nWhole iteration with the sandbox (test job included), p50 in ms, median of ${rounds} round(s), same runs\n`);
  console.log('| mode | base | new | new / base | every round (base / new) |\n|---|---|---|---|---|');
  for (const [name, side] of wholes) {
    const [before, after] = [median(side.base), median(side.head)];
    console.log(`| ${name} | ${before.toFixed(1)} | ${after.toFixed(1)} | ${(after / before).toFixed(2)}x | ${side.base.map((value, index) => `${value} / ${side.head[index]}`).join(', ')} |`);
  }
}
