// Prompt tokens per coder call against repository size, one run on this
// machine. The real agent-mode coder (repository map, tool loop, prompt
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
// The goal: prompt tokens flat across sizes and never over
// coder.promptBudgetTokens. The bench reports; it asserts nothing.
//
// This bench lives in the CLI, the composition root, because a service may
// not import another service (the Nx module boundaries).
//
// Run with `npm run bench` (builds first) or
// `node services/cli/bench/prompt-tokens.mts [sizes...]` after `npm run build`.
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { conversationTokens, countTokens, loadDefinitionExtractor, loadPrompts } from '@ratchet/agent';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { CoderMode, CoderServiceDefinition, Language, SafetyServiceDefinition, SandboxRunnerServiceDefinition, type SourceFile, type WriteCodeRequest } from '@ratchet/contracts';
import { createCoderService } from '@ratchet/coder';
import { ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { hostService } from '@ratchet/runtime';
import { createSafetyService, loadCommandPolicy } from '@ratchet/safety';
import { createSandboxRunnerService, sandboxRunnerOptionsOf } from '@ratchet/sandbox-runner';
// The bench runs the built package (dist), as a user's process would, not the sources.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { loadCliConfig } from '@ratchet/cli';

const sizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [10, 100, 1_000, 10_000];
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
  };
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
const hosted = [
  hostService({ name: 'safety', version: 'bench', definition: SafetyServiceDefinition, implementation: safety.implementation }, { transport }),
  hostService({ name: 'sandbox-runner', version: 'bench', definition: SandboxRunnerServiceDefinition, implementation: runner.implementation, instance: runner.instance }, { transport }),
  hostService({ name: 'coder', version: 'bench', definition: CoderServiceDefinition, implementation: coder.implementation }, { transport }),
];
await Promise.all(hosted.map((service) => service.server.ready));
const client = createClient(transport, CoderServiceDefinition, { defaultTimeoutMs: 900_000, maxAttempts: 1 });

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
  }
} finally {
  await Promise.all(hosted.map((service) => service.stop(1_000)));
  await coder.close();
  await runner.close();
  await safety.close();
  await transport.close();
}

console.log(`\nCoder prompt tokens per model call (conversationTokens, as the budget counts them), driver ${config.sandbox.driver}, one agent phase per size\n`);
console.log('| files | workspace bytes | phase | coder calls | prompt tokens min | median | max | budget (coder.promptBudgetTokens) | max <= budget | max + tool definitions (<= budget) | phase wall s |\n|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
