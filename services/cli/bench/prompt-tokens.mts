// Prompt tokens per model call against repository size, one run on this
// machine, for every role.
//
// The coder: the real agent-mode coder (repository map, tool loop, prompt
// budget), the real sandbox runner (the configured driver and limits) and
// the real safety service (the configured command policy) are hosted on one
// in-process bus; the coder's model is scripted: read a small file, search,
// run `ls | head`, read three large files, finish (the short phase), or read
// the three large files three times over (the long phase, whose history
// outgrows the budget). Generated Python workspaces of 10 to 10,000 files
// (modules with classes and functions in nested packages, tests beside
// them) each get one WriteCode call in agent mode per phase. Every prompt
// the model was sent is counted as the coder's budget counts it
// (`conversationTokens`: contents, tool calls, framing).
//
// The other roles: the real planner, tester and reflector services, on the
// same bus, get one call each per size with a scripted model, as the
// orchestrator makes them for a workspace task (its tests are the
// acceptance tests; the coder changed validate_0 in the small engine and a
// function in the middle of a 40 KB module; two tests fail with tracebacks
// into both): Reprompt and CreatePlan (the workspace and its tests),
// WriteTests (the changed workspace, the plan), Reflect (the changed files
// and every test, the report), Review and Audit (the change against its
// originals, one scanner finding). The prompt each was sent is counted the
// same way, against its role's promptBudgetTokens (config/planner.yaml,
// tester.yaml, reflector.yaml), which holds the messages and the reply
// schema sent beside them.
//
// The goal: prompt tokens flat across sizes and never over the role's
// budget. The bench reports; it asserts nothing.
//
// This bench lives in the CLI, the composition root, because a service may
// not import another service (the Nx module boundaries).
//
// Run with `npm run bench` (builds first) or
// `node services/cli/bench/prompt-tokens.mts [sizes...]` after `npm run build`;
// with RATCHET_BENCH_PROMPTS=DIR, each role's prompt is written to
// DIR/<role>-<size>.txt to read.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/cli:bench -c smoke`,
// as CI runs it) measures the 10-file workspace only, only to show the bench
// still runs; its figures then mean nothing. Sizes given still count. Its
// sandbox is the configured driver's (Docker), as the CLI's tests have it.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { auditorConfigSection, countTokens, mergeFiles, plannerConfigSection, reflectorConfigSection, reprompterConfigSection, reviewerConfigSection, sandboxLimitsOf, testerConfigSection, type PlannerSettings } from '@ratchet/agent';
import { definitionExtractorLoader, loadDefinitionExtractor } from '@ratchet/code-intel';
import { conversationTokens, loadPrompts } from '@ratchet/prompting';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { extendConfigSchema, loadConfig } from '@ratchet/config';
import {
  CoderMode,
  CoderServiceDefinition,
  Language,
  PlannerServiceDefinition,
  ReflectorServiceDefinition,
  SafetyServiceDefinition,
  SandboxRunnerServiceDefinition,
  Severity,
  TestCaseStatus,
  TesterServiceDefinition,
  type AuditRequest,
  type CreatePlanRequest,
  type Plan,
  type ReflectRequest,
  type RepromptRequest,
  type ReviewRequest,
  type SourceFile,
  type WriteCodeRequest,
  type WriteTestsRequest,
} from '@ratchet/contracts';
import { createCoderService } from '@ratchet/coder';
import { ChatRole, ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { createPlannerService } from '@ratchet/planner';
import { createReflectorService } from '@ratchet/reflector';
import { hostService } from '@ratchet/runtime';
import { createSafetyService, loadCommandPolicy } from '@ratchet/safety';
import { createSandboxRunnerService, sandboxRunnerOptionsOf } from '@ratchet/sandbox-runner';
import { createTesterService } from '@ratchet/tester';
import { auditReply, planReply, reflectionReply, reviewReply, specReply, testsReply } from '@ratchet/testing';
// The bench runs the built package (dist), as a user's process would, not the sources.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { loadCliConfig } from '@ratchet/cli';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const sizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : smoke ? [10] : [10, 100, 1_000, 10_000];
const configDir = path.resolve(import.meta.dirname, '../../../config');
const config = loadCliConfig(configDir);
const prompts = loadPrompts(configDir);

const smallFile = 'app/core/engine.py';
const largeFiles = ['app/reports/big_module_0.py', 'app/reports/big_module_1.py', 'app/reports/big_module_2.py'];

/** One ordinary module: imports, a constant, two classes with methods, three functions; about 2.5 KB. */
function module(index: number): string {
  const name = `Record${index}`;
  return `"""Records of batch ${index}: loading, validation and a summary."""

from __future__ import annotations

import dataclasses
import logging
from typing import Iterable

LOG = logging.getLogger(__name__)
BATCH_LIMIT_${index} = ${(index % 97) + 3}


@dataclasses.dataclass(frozen=True)
class ${name}:
    """One row of batch ${index}."""

    key: str
    amount: int
    tags: tuple[str, ...] = ()

    def is_large(self, threshold: int = ${(index % 13) + 100}) -> bool:
        return self.amount >= threshold

    def label(self) -> str:
        suffix = ",".join(sorted(self.tags))
        return f"{self.key}:{self.amount}" + (f" [{suffix}]" if suffix else "")


class ${name}Store:
    """Keeps ${name} rows in memory, keyed by key."""

    def __init__(self) -> None:
        self._rows: dict[str, ${name}] = {}

    def add(self, row: ${name}) -> None:
        if row.key in self._rows:
            raise KeyError(f"duplicate key {row.key}")
        self._rows[row.key] = row

    def total(self) -> int:
        return sum(row.amount for row in self._rows.values())

    def largest(self, count: int = 3) -> list[${name}]:
        return sorted(self._rows.values(), key=lambda row: row.amount, reverse=True)[:count]


def parse_line_${index}(line: str) -> ${name}:
    key, amount, *tags = line.strip().split(";")
    return ${name}(key=key, amount=int(amount), tags=tuple(tag for tag in tags if tag))


def validate_${index}(rows: Iterable[${name}]) -> list[str]:
    problems = []
    for row in rows:
        if row.amount < 0:
            problems.append(f"{row.key}: negative amount {row.amount}")
        if len(row.key) > 64:
            problems.append(f"{row.key[:10]}...: key longer than 64 characters")
    return problems


def summarise_${index}(store: ${name}Store) -> str:
    LOG.debug("summarising batch ${index}")
    largest = ", ".join(row.label() for row in store.largest())
    return f"batch ${index}: total {store.total()} (limit {BATCH_LIMIT_${index}}); largest {largest}"
`;
}

function testModule(index: number, modulePath: string): string {
  const dotted = modulePath.replace(/\.py$/, '').replaceAll('/', '.');
  return `from ${dotted} import Record${index}, Record${index}Store, parse_line_${index}, validate_${index}


def test_parse_line():
    row = parse_line_${index}("a;5;x;y")
    assert row == Record${index}(key="a", amount=5, tags=("x", "y"))


def test_store_total():
    store = Record${index}Store()
    store.add(Record${index}("a", 2))
    store.add(Record${index}("b", 3))
    assert store.total() == 5


def test_validate_negative():
    assert validate_${index}([Record${index}("a", -1)]) == ["a: negative amount -1"]
`;
}

/** A large module: 120 functions, about 40 KB, far more than one tool result shows. */
function largeModule(index: number): string {
  const functions = Array.from(
    { length: 120 },
    (_, number) => `def report_${index}_${number}(rows, width=${60 + (number % 20)}):
    """Report ${number} of section ${index}: one line per row, cut to width."""
    lines = []
    for row in rows:
        text = f"{row.key:<20} {row.amount:>10} {','.join(row.tags)}"
        lines.append(text[:width])
    return "\\n".join(lines)
`,
  );
  return `"""Report section ${index}: every report the back office prints."""\n\n\n${functions.join('\n\n')}`;
}

/** `count` files: three large modules, the small engine, then modules (and every fourth a test) in nested packages, with their __init__.py. */
function workspace(count: number): SourceFile[] {
  const files: SourceFile[] = [
    ...largeFiles.map((file, index) => ({ path: file, content: largeModule(index) })),
    { path: smallFile, content: module(0) },
    { path: 'app/__init__.py', content: '' },
  ];
  const packages = new Set<string>();
  for (let index = 1; files.length < count; index += 1) {
    const directory = `app/pkg_${index % 20}/area_${Math.floor(index / 20) % 10}/part_${Math.floor(index / 200) % 5}`;
    const modulePath = `${directory}/records_${index}.py`;
    files.push({ path: modulePath, content: module(index) });
    const parts = directory.split('/');
    for (let depth = 2; depth <= parts.length && files.length < count; depth += 1) {
      const init = `${parts.slice(0, depth).join('/')}/__init__.py`;
      if (!packages.has(init)) {
        packages.add(init);
        files.push({ path: init, content: '' });
      }
    }
    if (index % 4 === 0 && files.length < count) files.push({ path: `tests/${directory.slice('app/'.length)}/test_records_${index}.py`, content: testModule(index, modulePath) });
  }
  return files.slice(0, count);
}

/**
 * The coder's turns for one phase; each checks that the tool before it
 * worked. `rounds` times the three large files: 1 is the short phase; 3
 * grows the history past the budget, so the coder must summarise old results.
 */
function phaseTurns(rounds: number): ScriptedTurn[] {
  const reads = Array.from({ length: rounds }, () => largeFiles).flat();
  return [
    { role: 'coder', expect: ['Repository map'], toolCalls: [{ name: 'read_file', arguments: { path: smallFile } }] },
    { role: 'coder', expect: [`${smallFile} (`], toolCalls: [{ name: 'search', arguments: { pattern: 'def validate_' } }] },
    { role: 'coder', expect: ['def validate_'], toolCalls: [{ name: 'run', arguments: { command: 'ls | head' } }] },
    ...reads.map((file, index): ScriptedTurn => ({ role: 'coder', expect: [index === 0 ? 'exit code 0' : (reads[index - 1] ?? '')], toolCalls: [{ name: 'read_file', arguments: { path: file } }] })),
    { role: 'coder', expect: [reads.at(-1) ?? ''], toolCalls: [{ name: 'finish', arguments: { summary: 'read what the change needs' } }] },
  ];
}

function request(files: SourceFile[], size: number): WriteCodeRequest {
  return {
    taskId: `bench-prompt-${size}`,
    iteration: 1,
    goal: 'validate_0 lets keys longer than 64 characters through; reject them and say which key',
    language: Language.LANGUAGE_PYTHON,
    plan: {
      summary: 'Tighten validate_0 in the engine and report the offending key',
      steps: [{ number: 1, description: 'change validate_0', paths: [smallFile] }],
      files: [{ path: smallFile, purpose: 'the validation', isTest: false }],
      testStrategy: 'pytest',
      language: Language.LANGUAGE_PYTHON,
      dependencies: [],
      appliedLessonIds: [],
      changesTests: false,
      changesTestsReason: '',
    },
    files,
    acceptanceTests: [],
    reflection: undefined,
    previousTestReport: undefined,
    safetyFindings: [],
    lessons: [],
    maxTokens: 0,
    mode: CoderMode.CODER_MODE_AGENT,
    testCommand: [],
    maxModelCalls: 0,
    protectedPaths: [],
    progressSubject: '',
    approveAskedCommands: false,
    commandGates: false,
    commandDecisions: [],
    spec: undefined,
    profile: undefined,
    reviewFindings: [],
    dataFiles: [],
    setupCommand: '',
    existingProject: true,
    preExistingFailures: [],
    earlierChanges: [],
  };
}

/** The roles other than the coder, in the order the bench calls them for each size. */
const otherRoles = [ChatRole.REPROMPTER, ChatRole.PLANNER, ChatRole.TESTER, ChatRole.REFLECTOR, ChatRole.REVIEWER, ChatRole.AUDITOR] as const;
type OtherRole = (typeof otherRoles)[number];

/** Each role's promptBudgetTokens as its service process reads it: ratchet.yaml, then config/<service>.yaml, then RATCHET_* variables. */
function roleBudgets(): Record<OtherRole, number> & { plannerSettings: PlannerSettings } {
  const read = <T extends Parameters<typeof extendConfigSchema>[0]>(service: string, sections: T) => loadConfig({ schema: extendConfigSchema(sections), service, configDir });
  const planner = read('planner', { planner: plannerConfigSection, reprompter: reprompterConfigSection });
  const tester = read('tester', { tester: testerConfigSection });
  const reflector = read('reflector', { reflector: reflectorConfigSection, reviewer: reviewerConfigSection, auditor: auditorConfigSection });
  return {
    reprompter: planner.reprompter.promptBudgetTokens,
    planner: planner.planner.promptBudgetTokens,
    tester: tester.tester.promptBudgetTokens,
    reflector: reflector.reflector.promptBudgetTokens,
    reviewer: reflector.reviewer.promptBudgetTokens,
    auditor: reflector.auditor.promptBudgetTokens,
    plannerSettings: planner.planner,
  };
}

const goal = 'validate_0 lets keys longer than 64 characters through; reject them and say which key';
const engineTest = 'tests/core/test_engine.py';

/** The test the task's failures come from: one case per changed file. */
const engineTestContent = `from app.core.engine import Record0, validate_0
from app.reports.big_module_1 import report_1_60


def test_long_key_is_named():
    problems = validate_0([Record0("k" * 70, 1)])
    assert problems == ["key 'kkk...' is longer than 64 characters"]


def test_report_width():
    assert report_1_60([], width=80) == ""
`;

/** A change as the coder leaves it: validate_0 in the engine, and report_1_60 in the middle of a 40 KB module; with their originals. */
function changeOf(files: readonly SourceFile[]): { readonly base: SourceFile[]; readonly changed: SourceFile[]; readonly lines: Readonly<Record<string, number>> } {
  const edits: Record<string, [string, string]> = {
    [smallFile]: ['problems.append(f"{row.key[:10]}...: key longer than 64 characters")', 'problems.append(f"key {row.key!r} is longer than 64 characters")'],
    [largeFiles[1] as string]: ['def report_1_60(rows, width=60):', 'def report_1_60(rows, width=72):'],
  };
  const base = files.filter((file) => edits[file.path] !== undefined);
  const lines: Record<string, number> = {};
  const changed = base.map((file) => {
    const [from, to] = edits[file.path] as [string, string];
    const content = file.content.replace(from, to);
    lines[file.path] = content.slice(0, content.indexOf(to)).split('\n').length;
    return { path: file.path, content };
  });
  return { base, changed, lines };
}

const plan: Plan = {
  summary: 'Tighten validate_0 in the engine and report the offending key',
  steps: [{ number: 1, description: 'change validate_0', paths: [smallFile] }],
  files: [{ path: smallFile, purpose: 'the validation', isTest: false }],
  testStrategy: 'pytest',
  language: Language.LANGUAGE_PYTHON,
  dependencies: [],
  appliedLessonIds: [],
  changesTests: false,
  changesTestsReason: '',
};

/** One request per role for a workspace of `size` files, as the orchestrator builds them for a workspace task. */
function roleRequests(files: readonly SourceFile[], size: number) {
  const taskId = `bench-roles-${size}`;
  // A workspace task's own tests are its acceptance tests, sent beside the code, never in it.
  const tests = [...files.filter((file) => file.path.startsWith('tests/')), { path: engineTest, content: engineTestContent }];
  const workspace = files.filter((file) => !file.path.startsWith('tests/'));
  const { base, changed, lines } = changeOf(workspace);
  const engineLine = lines[smallFile] ?? 1;
  const reportLine = lines[largeFiles[1] as string] ?? 1;
  const failure = (name: string, detail: string) => ({ name, suite: 'tests.core.test_engine', file: engineTest, status: TestCaseStatus.TEST_CASE_STATUS_FAILED, duration: undefined, failureMessage: 'AssertionError', failureDetail: detail });
  const reprompt: RepromptRequest = { taskId, goal, language: Language.LANGUAGE_PYTHON, profile: undefined, workspace, acceptanceTests: tests, answered: [], maxQuestions: 0, maxTokens: 0 };
  const createPlan: CreatePlanRequest = {
    taskId,
    iteration: 1,
    goal,
    language: Language.LANGUAGE_PYTHON,
    workspace,
    acceptanceTests: tests,
    lessons: [],
    previousPlan: undefined,
    reflection: undefined,
    replanReason: '',
    previousFailure: '',
    maxTokens: 0,
    judgeTestEdits: false,
    spec: undefined,
    profile: undefined,
  };
  const writeTests: WriteTestsRequest = { taskId, iteration: 1, goal, language: Language.LANGUAGE_PYTHON, plan, files: mergeFiles(workspace, changed), existingTests: [], acceptanceTests: tests, lessons: [], maxTokens: 0, disputes: [], spec: undefined, profile: undefined };
  const reflect: ReflectRequest = {
    taskId,
    iteration: 1,
    goal,
    language: Language.LANGUAGE_PYTHON,
    plan,
    files: mergeFiles(changed, tests),
    testReport: {
      framework: 'pytest',
      total: tests.length * 3,
      passed: tests.length * 3 - 2,
      failed: 2,
      errored: 0,
      skipped: 0,
      duration: undefined,
      parsed: true,
      parseError: '',
      cases: [
        failure('test_long_key_is_named', `${engineTest}:6: in test_long_key_is_named\n    problems = validate_0([Record0("k" * 70, 1)])\n${smallFile}:${engineLine}: AssertionError`),
        failure('test_report_width', `${engineTest}:11: in test_report_width\n    assert report_1_60([], width=80) == ""\n${largeFiles[1]}:${reportLine}: TypeError`),
      ],
    },
    error: undefined,
    safetyFindings: [],
    stderrExcerpt: `${'.'.repeat(Math.min(tests.length * 3, 50_000))}FF\n2 failed`,
    previousReflections: [],
    lessons: [],
    maxTokens: 0,
    testDisputes: [],
    reviewFindings: [],
  };
  const review: ReviewRequest = { taskId, iteration: 1, goal, language: Language.LANGUAGE_PYTHON, spec: undefined, plan, baseFiles: base, files: changed, maxTokens: 0 };
  const finding = { ruleId: 'py.format-in-log', severity: Severity.SEVERITY_LOW, path: smallFile, line: engineLine, column: 1, message: 'user input in a message', snippet: 'problems.append(...)', remediation: '', cwe: 'CWE-117', confidence: 0, tool: 'semgrep', action: 0, preExisting: false };
  const audit: AuditRequest = { taskId, iteration: 1, goal, language: Language.LANGUAGE_PYTHON, baseFiles: base, files: changed, scannerFindings: [finding], maxTokens: 0 };
  return { reprompt, createPlan, writeTests, reflect, review, audit };
}

/** A valid reply for each role, so that no call needs a repair round. */
function roleTurns(): ScriptedTurn[] {
  return [
    { role: 'reprompter', reply: specReply({ summary: 'reject long keys' }) },
    // The planner of a workspace task looks at the project first, in every round it may: its later calls carry the results.
    { role: 'planner', toolCalls: [{ name: 'read_file', arguments: { path: smallFile } }, { name: 'read_file', arguments: { path: engineTest } }] },
    { role: 'planner', toolCalls: [{ name: 'search', arguments: { pattern: 'def validate_' } }] },
    { role: 'planner', toolCalls: [{ name: 'read_file', arguments: { path: smallFile, start_line: 1, end_line: 300 } }] },
    { role: 'planner', reply: planReply(smallFile, engineTest) },
    { role: 'tester', reply: testsReply('tests/core/test_engine_keys.py', 'def test_keys():\n    assert True\n') },
    { role: 'reflector', reply: reflectionReply('validate_0 still cuts the key') },
    { role: 'reviewer', reply: reviewReply([]) },
    { role: 'auditor', reply: auditReply([], [{ number: 1, real: false }]) },
  ];
}

const median = (values: readonly number[]) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? Number.NaN;

const phases = [
  { name: 'short', rounds: 1 },
  { name: 'long', rounds: 3 },
] as const;
const model = new ScriptedModel(
  sizes.flatMap(() => phases.flatMap((phase) => phaseTurns(phase.rounds))),
  { name: 'bench-prompt-tokens' },
);
const transport = new InProcessTransport();
const safety = await createSafetyService({ commandPolicy: loadCommandPolicy(configDir) });
const runner = createSandboxRunnerService({ ...sandboxRunnerOptionsOf(config.sandbox), runnerId: `bench-prompt-${process.pid}` });
const coder = createCoderService({ roleModel: { model, modelName: 'scripted:bench', temperature: 0, maxTokens: 4096 }, prompts, settings: config.coder, transport, extractor: () => loadDefinitionExtractor() });
const budgets = roleBudgets();
const roleModel = new ScriptedModel(sizes.flatMap(() => roleTurns()), { name: 'bench-role-prompts' });
const scripted = { model: roleModel, modelName: 'scripted:bench', temperature: 0, maxTokens: 4096 };
const extractor = definitionExtractorLoader();
const planner = createPlannerService({ roleModel: scripted, reprompterModel: scripted, prompts, settings: { planner: budgets.plannerSettings, reprompter: { promptBudgetTokens: budgets.reprompter } }, extractor });
const tester = createTesterService({
  roleModel: scripted,
  prompts,
  // WriteTests runs nothing in a sandbox.
  sandbox: { runJob: () => Promise.reject(new Error('the prompt bench runs no tests')) },
  limits: sandboxLimitsOf(config.sandbox),
  image: config.sandbox.image,
  settings: { promptBudgetTokens: budgets.tester },
  extractor,
});
const reflector = createReflectorService({
  roleModel: scripted,
  reviewerModel: scripted,
  auditorModel: scripted,
  prompts,
  settings: { reflector: { promptBudgetTokens: budgets.reflector }, reviewer: { promptBudgetTokens: budgets.reviewer }, auditor: { promptBudgetTokens: budgets.auditor } },
  extractor,
});
const hosted = [
  hostService({ name: 'safety', version: 'bench', definition: SafetyServiceDefinition, implementation: safety.implementation }, { transport }),
  hostService({ name: 'sandbox-runner', version: 'bench', definition: SandboxRunnerServiceDefinition, implementation: runner.implementation, instance: runner.instance }, { transport }),
  hostService({ name: 'coder', version: 'bench', definition: CoderServiceDefinition, implementation: coder.implementation }, { transport }),
  hostService({ name: 'planner', version: 'bench', definition: PlannerServiceDefinition, implementation: planner.implementation }, { transport }),
  hostService({ name: 'tester', version: 'bench', definition: TesterServiceDefinition, implementation: tester.implementation }, { transport }),
  hostService({ name: 'reflector', version: 'bench', definition: ReflectorServiceDefinition, implementation: reflector.implementation }, { transport }),
];
await Promise.all(hosted.map((service) => service.server.ready));
const client = createClient(transport, CoderServiceDefinition, { defaultTimeoutMs: 900_000, maxAttempts: 1 });
const roleClients = {
  planner: createClient(transport, PlannerServiceDefinition, { defaultTimeoutMs: 900_000, maxAttempts: 1 }),
  tester: createClient(transport, TesterServiceDefinition, { defaultTimeoutMs: 900_000, maxAttempts: 1 }),
  reflector: createClient(transport, ReflectorServiceDefinition, { defaultTimeoutMs: 900_000, maxAttempts: 1 }),
};

/** Per role and size: the tokens of the one prompt sent, of its reply schema, and the call's wall time. */
interface RoleMeasure {
  readonly tokens: number;
  readonly schemaTokens: number;
  readonly calls: number;
  readonly wallMs: number;
}
const roleRows = new Map<OtherRole, Map<number, RoleMeasure>>(otherRoles.map((role) => [role, new Map()]));

/** Calls one role and counts what its model was sent; a reply the role could not use is an error (the script is wrong). */
async function measure(role: OtherRole, size: number, call: () => Promise<{ readonly replyFailure?: { readonly message: string } | undefined }>): Promise<void> {
  const before = roleModel.calls.length;
  const started = performance.now();
  const response = await call();
  const wallMs = performance.now() - started;
  if (response.replyFailure !== undefined) throw new Error(`the ${role} could not use its scripted reply for ${size} files: ${response.replyFailure.message}`);
  const calls = roleModel.calls.slice(before);
  const first = calls[0];
  if (first === undefined || first.request.role !== role) throw new Error(`the ${role} did not call its model for ${size} files`);
  // The largest prompt of the role's calls (the planner's grow with its lookups), the tools sent with it included.
  const tokens = Math.max(...calls.map((sent) => conversationTokens(sent.request.messages) + (sent.request.tools === undefined ? 0 : countTokens(JSON.stringify(sent.request.tools)))));
  roleRows.get(role)?.set(size, { tokens, schemaTokens: countTokens(JSON.stringify(first.request.responseFormat?.schema ?? {})), calls: calls.length, wallMs });
  const dump = process.env['RATCHET_BENCH_PROMPTS'];
  if (dump !== undefined && dump !== '') {
    mkdirSync(dump, { recursive: true });
    writeFileSync(path.join(dump, `${role}-${size}.txt`), first.request.messages.map((message) => `===== ${message.role}\n${message.content}`).join('\n'));
  }
}

const budget = config.coder.promptBudgetTokens;
const rows: string[] = [];
try {
  for (const size of sizes) {
    const files = workspace(size);
    const bytes = files.reduce((sum, file) => sum + Buffer.byteLength(file.content, 'utf8'), 0);
    for (const phase of phases) {
      const before = model.calls.length;
      const started = performance.now();
      const response = await client.writeCode(request(files, size));
      const wallSeconds = (performance.now() - started) / 1000;
      const failed = response.toolSteps.filter((step) => step.failed);
      if (failed.length > 0 || !response.summary.includes('read what the change needs')) {
        throw new Error(`the ${phase.name} phase for ${size} files did not go as scripted: ${response.summary}; failed steps: ${failed.map((step) => `${step.tool}: ${step.result}`).join(' | ')}`);
      }
      const calls = model.calls.slice(before);
      const tokens = calls.map((call) => conversationTokens(call.request.messages));
      // The tool definitions go with every call, but the coder's budget does not count them.
      const toolTokens = countTokens(JSON.stringify(calls[0]?.request.tools ?? []));
      const max = Math.max(...tokens);
      rows.push(
        `| ${size.toLocaleString('en')} | ${bytes.toLocaleString('en')} | ${phase.name} | ${calls.length} | ${Math.min(...tokens).toLocaleString('en')} | ${median(tokens).toLocaleString('en')} | ${max.toLocaleString('en')} | ${budget.toLocaleString('en')} | ${max <= budget ? 'yes' : 'no'} | ${(max + toolTokens).toLocaleString('en')} (${max + toolTokens <= budget ? 'yes' : 'no'}) | ${wallSeconds.toFixed(1)} |`,
      );
      console.log(`${size} files, ${phase.name} phase: prompt tokens per call ${tokens.join(', ')}`);
    }
    const requests = roleRequests(files, size);
    await measure(ChatRole.REPROMPTER, size, () => roleClients.planner.reprompt(requests.reprompt));
    await measure(ChatRole.PLANNER, size, () => roleClients.planner.createPlan(requests.createPlan));
    await measure(ChatRole.TESTER, size, () => roleClients.tester.writeTests(requests.writeTests));
    await measure(ChatRole.REFLECTOR, size, () => roleClients.reflector.reflect(requests.reflect));
    await measure(ChatRole.REVIEWER, size, () => roleClients.reflector.review(requests.review));
    await measure(ChatRole.AUDITOR, size, () => roleClients.reflector.audit(requests.audit));
    console.log(`${size} files, other roles: prompt tokens ${otherRoles.map((role) => `${role} ${roleRows.get(role)?.get(size)?.tokens ?? '?'}`).join(', ')}`);
  }
} finally {
  await Promise.all(hosted.map((service) => service.stop(1_000)));
  await coder.close();
  await Promise.all([planner.close(), tester.close(), reflector.close()]);
  await runner.close();
  await safety.close();
  await transport.close();
}

console.log(`\nCoder prompt tokens per model call (conversationTokens, as the budget counts them), driver ${config.sandbox.driver}, one agent phase per size\n`);
console.log('| files | workspace bytes | phase | coder calls | prompt tokens min | median | max | budget (coder.promptBudgetTokens) | max <= budget | max + tool definitions (<= budget) | phase wall s |\n|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);

const number = (value: number) => value.toLocaleString('en');
console.log(`\nPrompt tokens of the largest call per role (conversationTokens of its messages, with the tools sent beside them: the planner's last call carries its lookups' results), by workspace size in files; the role's budget holds them and the reply schema sent beside them\n`);
console.log(`| role | budget (promptBudgetTokens) | ${sizes.map((size) => `${number(size)} files`).join(' | ')} | max + reply schema | <= budget | model calls | slowest call ms |`);
console.log(`|---|---|${sizes.map(() => '---|').join('')}---|---|---|---|`);
for (const role of otherRoles) {
  const measured = sizes.map((size) => roleRows.get(role)?.get(size));
  const tokens = measured.map((row) => row?.tokens ?? Number.NaN);
  const max = Math.max(...tokens);
  const schema = Math.max(...measured.map((row) => row?.schemaTokens ?? 0));
  const calls = Math.max(...measured.map((row) => row?.calls ?? 0));
  const slowest = Math.max(...measured.map((row) => row?.wallMs ?? 0));
  console.log(`| ${role} | ${number(budgets[role])} | ${tokens.map(number).join(' | ')} | ${number(max + schema)} | ${max + schema <= budgets[role] ? 'yes' : 'no'} | ${calls} | ${slowest.toFixed(0)} |`);
}
