import { formatCost } from '../render';
import { PassName } from './passes';
import { addUsage, noUsage, Role, tokensOf, type RoleUsage, type TaskResult } from './result';
import { bootstrapResamples, fewPairs, pairedBootstrap, type MeanInterval } from './stats';

// The report of a run, from its results: per pass a row per task and the
// totals, and with --compare-memory the paired differences warm - off and
// warm - cold. Pure: the same results give the same report (terminal table,
// Markdown, JSON).

export interface TaskRow {
  readonly task: string;
  /** Results of this task in the pass (one per repeat that finished). */
  readonly runs: number;
  readonly passed: number;
  readonly passedFirst: number;
  readonly meanIterations: number;
  readonly meanModelCalls: number;
  readonly meanTokens: number;
  readonly costUsd: number;
  readonly meanWallMs: number;
  /** Mean number of lessons retrieved, and of those applied, per run. */
  readonly meanLessonsRetrieved: number;
  readonly meanLessonsApplied: number;
  /** How the last run ended, e.g. `max iterations`, for a single run's row. */
  readonly lastStopReason: string;
  /** The Ratchet task ids, for `ratchet show`. */
  readonly taskIds: readonly string[];
  /** Runs judged by hidden tests, and of those resolved; 0 and 0 for a task without hidden tests. */
  readonly judged: number;
  readonly resolved: number;
}

export interface PassTotals {
  /** Task results in the pass. */
  readonly runs: number;
  readonly passed: number;
  readonly passedFirst: number;
  /** passed / runs, 0 when nothing ran. */
  readonly passRate: number;
  readonly passAt1: number;
  readonly meanIterations: number;
  readonly usage: RoleUsage;
  readonly byRole: Readonly<Record<Role, RoleUsage>>;
  readonly wallMs: number;
  readonly meanWallMs: number;
  readonly lessonsRetrieved: number;
  readonly lessonsApplied: number;
  /** Runs that applied at least one lesson. */
  readonly runsApplyingLessons: number;
  /** Runs judged by hidden tests, and of those resolved (all their hidden tests pass). */
  readonly judged: number;
  readonly resolved: number;
}

export interface PassSummary {
  readonly name: PassName;
  readonly repeats: number;
  readonly rows: readonly TaskRow[];
  readonly totals: PassTotals;
  /** Selected tasks with no result in this pass yet (a run stopped early). */
  readonly missing: number;
}

export const CompareMetric = { ITERATIONS: 'iterations', TOKENS: 'tokens', WALL_SECONDS: 'wallSeconds' } as const;
export type CompareMetric = (typeof CompareMetric)[keyof typeof CompareMetric];

/** warm - baseline for one metric. */
export interface Difference {
  readonly metric: CompareMetric;
  readonly baseline: typeof PassName.OFF | typeof PassName.COLD;
  /** Mean over the task's repeats; tasks without both passes are left out. */
  readonly perTask: readonly { readonly task: string; readonly meanDifference: number; readonly pairs: number }[];
  /** Over every (task, repeat) pair, with its 95% interval. */
  readonly overall?: MeanInterval;
}

export interface InputError {
  readonly task: string;
  readonly error: string;
}

export interface BenchReport {
  readonly suite: { readonly name: string; readonly source: string; readonly hash: string; readonly tasks: number; readonly selected: number };
  readonly run: { readonly dir: string; readonly runId: string; readonly createdAt: string };
  readonly models: readonly string[];
  readonly passes: readonly PassSummary[];
  readonly inputErrors: readonly InputError[];
  /** With --compare-memory. */
  readonly comparison?: { readonly method: string; readonly differences: readonly Difference[] };
  /** How to look at a task's iterations, e.g. `ratchet show TASK_ID --data-dir DIR`. */
  readonly lookCloser: readonly string[];
}

export interface ReportInput {
  readonly suite: BenchReport['suite'];
  readonly run: BenchReport['run'];
  /** The passes this command ran, in order (names may repeat across repeats). */
  readonly passes: readonly { readonly name: PassName; readonly repeat: number }[];
  /** The selected task ids, in suite order (input errors excluded). */
  readonly tasks: readonly string[];
  readonly results: readonly TaskResult[];
  readonly inputErrors: readonly InputError[];
  readonly compareMemory: boolean;
  readonly lookCloser: readonly string[];
}

const mean = (values: readonly number[]) => (values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length);
const sumUsage = (usages: readonly RoleUsage[]) => usages.reduce(addUsage, noUsage);

/** The report of the selected tasks' results in this command's passes. */
export function buildReport(input: ReportInput): BenchReport {
  const selected = new Set(input.tasks);
  const names = [...new Set(input.passes.map((pass) => pass.name))];
  const repeatsOf = (name: PassName) => new Set(input.passes.filter((pass) => pass.name === name).map((pass) => pass.repeat));
  const inPass = (name: PassName) => {
    const repeats = repeatsOf(name);
    return input.results.filter((result) => result.pass === name && repeats.has(result.repeat) && selected.has(result.task));
  };
  const passes = names.map((name) => summarizePass(name, repeatsOf(name).size, input.tasks, inPass(name)));
  const models = [...new Set(input.results.flatMap((result) => result.models))].sort();
  const report: BenchReport = { suite: input.suite, run: input.run, models, passes, inputErrors: input.inputErrors, lookCloser: input.lookCloser };
  if (!input.compareMemory) return report;
  const warm = inPass(PassName.WARM);
  const differences: Difference[] = [];
  for (const baseline of [PassName.OFF, PassName.COLD] as const) {
    const base = new Map(inPass(baseline).map((result) => [`${result.task}\0${result.repeat}`, result]));
    for (const metric of Object.values(CompareMetric)) differences.push(difference(metric, baseline, input.tasks, warm, base));
  }
  return {
    ...report,
    comparison: {
      method: `mean of paired differences (same task and repeat), 95% percentile bootstrap over the pairs, ${bootstrapResamples.toLocaleString('en-US')} resamples, fixed seed`,
      differences,
    },
  };
}

function metricOf(result: TaskResult, metric: CompareMetric): number {
  if (metric === CompareMetric.ITERATIONS) return result.iterations;
  if (metric === CompareMetric.TOKENS) return tokensOf(result.usage);
  return result.wallMs / 1000;
}

function difference(metric: CompareMetric, baseline: Difference['baseline'], tasks: readonly string[], warm: readonly TaskResult[], base: ReadonlyMap<string, TaskResult>): Difference {
  const pairs = warm.flatMap((result) => {
    const other = base.get(`${result.task}\0${result.repeat}`);
    return other === undefined ? [] : [{ task: result.task, value: metricOf(result, metric) - metricOf(other, metric) }];
  });
  const perTask = tasks.flatMap((task) => {
    const values = pairs.filter((pair) => pair.task === task).map((pair) => pair.value);
    return values.length === 0 ? [] : [{ task, meanDifference: mean(values), pairs: values.length }];
  });
  const overall = pairedBootstrap(pairs.map((pair) => pair.value));
  return { metric, baseline, perTask, ...(overall === undefined ? {} : { overall }) };
}

function summarizePass(name: PassName, repeats: number, tasks: readonly string[], results: readonly TaskResult[]): PassSummary {
  const rows = tasks.flatMap((task): TaskRow[] => {
    const runs = results.filter((result) => result.task === task).sort((left, right) => left.repeat - right.repeat);
    if (runs.length === 0) return [];
    return [
      {
        task,
        runs: runs.length,
        passed: runs.filter((run) => run.passed).length,
        passedFirst: runs.filter((run) => run.passedFirst).length,
        meanIterations: mean(runs.map((run) => run.iterations)),
        meanModelCalls: mean(runs.map((run) => run.usage.modelCalls)),
        meanTokens: mean(runs.map((run) => tokensOf(run.usage))),
        costUsd: sumUsage(runs.map((run) => run.usage)).costUsd,
        meanWallMs: mean(runs.map((run) => run.wallMs)),
        meanLessonsRetrieved: mean(runs.map((run) => run.lessonsRetrieved.length)),
        meanLessonsApplied: mean(runs.map((run) => run.lessonsApplied.length)),
        lastStopReason: runs.at(-1)?.stopReason ?? '',
        taskIds: runs.map((run) => run.taskId),
        judged: runs.filter((run) => run.hidden !== undefined).length,
        resolved: runs.filter((run) => run.hidden?.resolved === true).length,
      },
    ];
  });
  const runs = results.length;
  const passed = results.filter((result) => result.passed).length;
  const passedFirst = results.filter((result) => result.passedFirst).length;
  const byRole = Object.fromEntries(Object.values(Role).map((role) => [role, sumUsage(results.map((result) => result.byRole[role] ?? noUsage))])) as Record<Role, RoleUsage>;
  const wallMs = results.reduce((sum, result) => sum + result.wallMs, 0);
  const totals: PassTotals = {
    runs,
    passed,
    passedFirst,
    passRate: runs === 0 ? 0 : passed / runs,
    passAt1: runs === 0 ? 0 : passedFirst / runs,
    meanIterations: mean(results.map((result) => result.iterations)),
    usage: sumUsage(results.map((result) => result.usage)),
    byRole,
    wallMs,
    meanWallMs: runs === 0 ? 0 : wallMs / runs,
    lessonsRetrieved: results.reduce((sum, result) => sum + result.lessonsRetrieved.length, 0),
    lessonsApplied: results.reduce((sum, result) => sum + result.lessonsApplied.length, 0),
    runsApplyingLessons: results.filter((result) => result.lessonsApplied.length > 0).length,
    judged: results.filter((result) => result.hidden !== undefined).length,
    resolved: results.filter((result) => result.hidden?.resolved === true).length,
  };
  return { name, repeats, rows, totals, missing: tasks.length * repeats - runs };
}

// Rendering.

const integer = (value: number) => Math.round(value).toLocaleString('en-US');
const decimal = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(1));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
const percent = (rate: number) => `${Math.round(rate * 100)}%`;
/** `+1.50`, `-0.25`, and `0.00` for anything that rounds to zero (never `-0.00`). */
function signed(value: number, digits: number): string {
  const text = Math.abs(value).toFixed(digits);
  if (Number(text) === 0) return text;
  return `${value > 0 ? '+' : '-'}${text}`;
}

const metricLabels: Readonly<Record<CompareMetric, string>> = { iterations: 'iterations', tokens: 'tokens', wallSeconds: 'time (s)' };

const passTitles: Readonly<Record<PassName, string>> = {
  fresh: 'memory fresh (starts empty)',
  shared: 'memory shared (your lessons)',
  off: 'memory off',
  cold: 'cold (memory starts empty)',
  warm: 'warm (memory from the cold pass)',
};

/** The resolved column, for a pass where some task has hidden tests. */
function resolvedCell(row: TaskRow): string {
  if (row.judged === 0) return '-';
  return row.runs === 1 ? (row.resolved === 1 ? 'yes' : 'no') : `${row.resolved}/${row.judged}`;
}

function rowCells(row: TaskRow, withResolved: boolean): string[] {
  const single = row.runs === 1;
  return [
    row.task,
    single ? (row.passed === 1 ? 'passed' : `FAILED (${row.lastStopReason})`) : `${row.passed}/${row.runs}`,
    ...(withResolved ? [resolvedCell(row)] : []),
    single ? (row.passedFirst === 1 ? 'yes' : 'no') : `${row.passedFirst}/${row.runs}`,
    decimal(row.meanIterations),
    decimal(row.meanModelCalls),
    integer(row.meanTokens),
    formatCost(row.costUsd),
    seconds(row.meanWallMs),
    `${decimal(row.meanLessonsRetrieved)}/${decimal(row.meanLessonsApplied)}`,
  ];
}

/** The table's header; `resolved` (by the hidden tests) after `result` when some task has hidden tests. */
function header(withResolved: boolean): string[] {
  return ['task', 'result', ...(withResolved ? ['resolved'] : []), 'pass@1', 'iterations', 'model calls', 'tokens', 'cost', 'time', 'lessons retrieved/applied'];
}

function totalsLine(totals: PassTotals): string {
  const resolved = totals.judged === 0 ? '' : `resolved ${totals.resolved}/${totals.judged} (${percent(totals.resolved / totals.judged)}) by the hidden tests, `;
  return (
    `${resolved}${totals.passed}/${totals.runs} passed (${percent(totals.passRate)}), pass@1 ${totals.passedFirst}/${totals.runs} (${percent(totals.passAt1)}), ` +
    `${decimal(Number(totals.meanIterations.toFixed(2)))} iterations on average, ${integer(totals.usage.modelCalls)} model calls, ` +
    `${integer(tokensOf(totals.usage))} tokens, ${formatCost(totals.usage.costUsd)}, ${seconds(totals.wallMs)} of task time`
  );
}

function rolesLine(totals: PassTotals): string {
  return Object.values(Role)
    .filter((role) => role !== Role.OTHER || totals.byRole[role].modelCalls > 0)
    .map((role) => `${role} ${integer(tokensOf(totals.byRole[role]))} (${integer(totals.byRole[role].modelCalls)} calls, ${formatCost(totals.byRole[role].costUsd)})`)
    .join(', ');
}

function metricText(metric: CompareMetric, value: number): string {
  if (metric === CompareMetric.ITERATIONS) return `${signed(value, 2)} iterations`;
  if (metric === CompareMetric.TOKENS) return `${signed(value, 0)} tokens`;
  return `${signed(value, 1)} s`;
}

function intervalText(difference: Difference): string {
  const overall = difference.overall;
  if (overall === undefined) return 'no pairs yet';
  const digits = difference.metric === CompareMetric.TOKENS ? 0 : difference.metric === CompareMetric.ITERATIONS ? 2 : 1;
  const range = `95% CI [${signed(overall.low, digits)}, ${signed(overall.high, digits)}]`;
  return `${metricText(difference.metric, overall.mean)} per task, ${range}, n=${overall.n}${overall.n < fewPairs ? ' (few pairs: the interval is optimistic)' : ''}`;
}

/** Aligns columns with two spaces between them; numbers right-aligned. */
function alignTable(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => (column === 0 || column === 1 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

/** The report as terminal lines. */
export function renderTable(report: BenchReport): string[] {
  const lines: string[] = [];
  for (const pass of report.passes) {
    lines.push('', `== ${passTitles[pass.name]}${pass.repeats > 1 ? `, ${pass.repeats} repeats` : ''}`);
    const withResolved = pass.totals.judged > 0;
    if (pass.rows.length > 0) lines.push(...alignTable([header(withResolved), ...pass.rows.map((row) => rowCells(row, withResolved))]));
    lines.push(`total: ${totalsLine(pass.totals)}`);
    if (pass.totals.runs > 0) lines.push(`tokens by role: ${rolesLine(pass.totals)}`);
    if (pass.totals.lessonsRetrieved > 0) lines.push(`lessons: ${pass.totals.lessonsRetrieved} retrieved, ${pass.totals.lessonsApplied} applied, in ${pass.totals.runsApplyingLessons} of ${pass.totals.runs} task runs`);
    if (pass.missing > 0) lines.push(`not run yet: ${pass.missing} task run(s); run the same command again to finish`);
  }
  if (report.comparison !== undefined) {
    lines.push('', '== memory compared (warm minus baseline; negative is better)');
    for (const difference of report.comparison.differences) lines.push(`warm vs ${difference.baseline}: ${intervalText(difference)}`);
    lines.push(`(${report.comparison.method})`);
  }
  if (report.inputErrors.length > 0) {
    lines.push('', `input errors (${report.inputErrors.length} task(s) not run):`);
    for (const error of report.inputErrors) lines.push(`  ${error.task}: ${error.error}`);
  }
  return lines;
}

const escapeCell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** A Markdown table; the first `textColumns` columns are left-aligned, the rest (numbers) right-aligned. */
function markdownTable(head: readonly string[], rows: readonly (readonly string[])[], textColumns: number): string[] {
  return [`| ${head.map(escapeCell).join(' | ')} |`, `|${head.map((_, index) => (index < textColumns ? ' --- ' : ' ---: ')).join('|')}|`, ...rows.map((row) => `| ${row.map(escapeCell).join(' | ')} |`)];
}

/** The report as a Markdown document (report.md in the run directory). */
export function renderMarkdown(report: BenchReport): string {
  const lines = [
    `# ratchet bench: ${report.suite.name}`,
    '',
    `- Suite: \`${report.suite.source}\` (${report.suite.tasks} tasks, ${report.suite.selected} selected; hash \`${report.suite.hash.slice(0, 12)}\`)`,
    `- Run: ${report.run.runId}, started ${report.run.createdAt}`,
    `- Model: ${report.models.length === 0 ? 'the server\'s' : report.models.map((model) => `\`${model}\``).join(', ')}`,
    '',
    'pass@1: passed on the first iteration. Result: passed within the budget. Resolved (tasks with hidden tests): every hidden fail-to-pass and pass-to-pass test passes on the result. Iterations, model calls, tokens and time are means per task run; cost is the total.',
  ];
  for (const pass of report.passes) {
    lines.push('', `## ${passTitles[pass.name]}${pass.repeats > 1 ? `, ${pass.repeats} repeats` : ''}`, '');
    const withResolved = pass.totals.judged > 0;
    if (pass.rows.length > 0) lines.push(...markdownTable(header(withResolved), pass.rows.map((row) => rowCells(row, withResolved)), withResolved ? 3 : 2), '');
    lines.push(`**Total:** ${totalsLine(pass.totals)}.`, '');
    if (pass.totals.runs > 0) {
      lines.push(
        ...markdownTable(
          ['role', 'model calls', 'prompt tokens', 'completion tokens', 'cost'],
          Object.values(Role).map((role) => {
            const usage = pass.totals.byRole[role];
            return [role, integer(usage.modelCalls), integer(usage.promptTokens), integer(usage.completionTokens), formatCost(usage.costUsd)];
          }),
          1,
        ),
        '',
      );
    }
    lines.push(`Lessons: ${pass.totals.lessonsRetrieved} retrieved, ${pass.totals.lessonsApplied} applied, in ${pass.totals.runsApplyingLessons} of ${pass.totals.runs} task runs.`);
    if (pass.missing > 0) lines.push('', `Not run yet: ${pass.missing} task run(s). Run the same command again to finish them.`);
  }
  if (report.comparison !== undefined) {
    lines.push('', '## Memory compared', '', 'Warm pass minus baseline, per task (negative: the warm pass needed less).', '');
    const tasks = [...new Set(report.comparison.differences.flatMap((difference) => difference.perTask.map((entry) => entry.task)))];
    const cell = (baseline: Difference['baseline'], metric: CompareMetric, task: string) => {
      const entry = report.comparison?.differences.find((difference) => difference.baseline === baseline && difference.metric === metric)?.perTask.find((value) => value.task === task);
      return entry === undefined ? '' : metricText(metric, entry.meanDifference);
    };
    const metrics = Object.values(CompareMetric);
    lines.push(
      ...markdownTable(
        ['task', ...metrics.map((metric) => `${metricLabels[metric]} vs off`), ...metrics.map((metric) => `${metricLabels[metric]} vs cold`)],
        tasks.map((task) => [task, ...metrics.map((metric) => cell(PassName.OFF, metric, task)), ...metrics.map((metric) => cell(PassName.COLD, metric, task))]),
        1,
      ),
      '',
    );
    for (const difference of report.comparison.differences) lines.push(`- warm vs ${difference.baseline}: ${intervalText(difference)}`);
    lines.push('', `Interval: ${report.comparison.method}.`);
  }
  if (report.inputErrors.length > 0) {
    lines.push('', '## Input errors', '', 'These tasks were not run:', '');
    for (const error of report.inputErrors) lines.push(`- \`${error.task}\`: ${escapeCell(error.error)}`);
  }
  if (report.lookCloser.length > 0) lines.push('', 'Look closer at a task (its ids are in results.jsonl):', '', ...report.lookCloser.map((command) => `    ${command}`));
  lines.push('');
  return lines.join('\n');
}
