import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { scriptedGoals, startOtlpReceiver, startStack, waitFor, writeScript, type OtlpReceiver, type ReceivedSpan, type Stack } from '@ratchet/testing';

// One task is one trace: the distributed stack (every service its own
// process, the OpenTelemetry preload in each, as the image runs them) and the
// built `ratchet` CLI export over OTLP/HTTP to a receiver standing in for the
// Collector. Only the model is scripted.
jest.setTimeout(600_000);

const repoRoot = path.resolve(__dirname, '../..');
const bin = path.join(repoRoot, 'services', 'cli', 'bin', 'ratchet.js');
const token = 'traces-e2e-token';
/** Every process a task passes through, by `service.name`. */
const services = ['cli', 'orchestrator', 'planner', 'coder', 'tester', 'reflector', 'safety', 'memory', 'sandbox-runner'];

interface Run {
  readonly code: number | null;
  readonly stderr: string;
}

/** Exporting settings for every process: the receiver, and batches sent quickly so the test need not wait 5 s for them. */
const otelEnv = (receiver: OtlpReceiver): Record<string, string> => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '200' });

/** The built `ratchet` command against `stack`, with nothing from this shell's RATCHET_* or OTEL_* settings. */
function ratchet(stack: Stack, args: string[], cwd: string, env: Record<string, string>): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_') && !name.startsWith('OTEL_')));
  const child = spawn(process.execPath, [bin, ...args], { cwd, env: { ...clean, RATCHET_SERVER: stack.grpcAddress, RATCHET_TOKEN: token, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

/** What is wrong with a task's trace as received so far: nothing when it is whole. */
function traceProblems(spans: readonly ReceivedSpan[]): string[] {
  const problems: string[] = [];
  const ids = new Set(spans.map((span) => span.spanId));
  const missing = services.filter((service) => !spans.some((span) => span.serviceName === service));
  if (missing.length > 0) problems.push(`no spans yet from ${missing.join(', ')}`);
  const orphans = spans.filter((span) => span.parentSpanId !== undefined && !ids.has(span.parentSpanId));
  if (orphans.length > 0) problems.push(`spans whose parent is not in the trace: ${orphans.map((span) => `${span.serviceName}/${span.name}`).join(', ')}`);
  const roots = spans.filter((span) => span.parentSpanId === undefined);
  if (roots.length !== 1) problems.push(`${roots.length} root spans: ${roots.map((span) => `${span.serviceName}/${span.name}`).join(', ')}`);
  return problems;
}

describe('traces of a task', () => {
  let receiver: OtlpReceiver;
  let stack: Stack;
  let dir: string;
  const goal = scriptedGoals('trace', 1, { failFirst: true })[0]!;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ratchet-traces-'));
    receiver = await startOtlpReceiver();
    const script = path.join(dir, 'model-script.json');
    await writeScript(script, [goal]);
    stack = await startStack({ repoRoot, token, env: { RATCHET_MODEL_SCRIPT: script, ...otelEnv(receiver) } });
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('makes one trace, from the CLI through every service to the sandbox runner, with every parent in it', async () => {
    // The first attempt fails its test, so the reflector (and memory, for the lesson) take part too.
    const run = await ratchet(stack, ['run', goal.goal, '--out', path.join(dir, 'out')], dir, otelEnv(receiver));
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${stack.output().slice(-6000)}`);
    expect(run.stderr).toMatch(/SUCCEEDED after 2 iteration/);
    const taskId = /task ([0-9a-f-]{36}) submitted/.exec(run.stderr)?.[1];
    expect(taskId).toBeDefined();

    const tracesOfTask = () => [...new Set(receiver.spans().filter((span) => span.attributes['ratchet.task_id'] === taskId).map((span) => span.traceId))];
    // Spans arrive in batches from nine processes; wait until the trace is whole (or say what it lacks).
    await waitFor(() => tracesOfTask().length === 1 && traceProblems(receiver.trace(tracesOfTask()[0]!)).length === 0, {
      timeoutMs: 60_000,
      message: `one whole trace of task ${taskId}; traces: ${JSON.stringify(tracesOfTask())}, problems: ${JSON.stringify(tracesOfTask().map((id) => traceProblems(receiver.trace(id))))}`,
    });
    expect(receiver.rejected()).toEqual([]);

    const [traceId] = tracesOfTask();
    const spans = receiver.trace(traceId!);
    expect(traceProblems(spans)).toEqual([]);
    expect([...new Set(spans.map((span) => span.serviceName))].sort()).toEqual([...services].sort());

    // The root is the command the user typed; the orchestrator's submit is the task span the dashboard lists.
    const root = spans.find((span) => span.parentSpanId === undefined)!;
    expect(root).toEqual(expect.objectContaining({ serviceName: 'cli', name: 'ratchet run' }));
    expect(root.attributes['ratchet.task_id']).toBe(taskId);
    const submit = spans.find((span) => span.serviceName === 'orchestrator' && span.name === 'ratchet.v1.OrchestratorService/SubmitTask')!;
    expect(submit).toEqual(expect.objectContaining({ kind: 2, attributes: expect.objectContaining({ 'ratchet.task_id': taskId, 'rpc.system': 'grpc' }) }));
    // Each phase is a child of the submit, with the task id, the iteration and its tokens.
    const phases = spans.filter((span) => span.name.startsWith('phase '));
    expect(phases.map((span) => span.name)).toEqual(expect.arrayContaining(['phase planning', 'phase coding', 'phase testing', 'phase reflecting']));
    for (const phase of phases) {
      expect(phase.parentSpanId).toBe(submit.spanId);
      expect(phase.attributes).toEqual(expect.objectContaining({ 'ratchet.task_id': taskId, 'ratchet.iteration': expect.any(Number), 'ratchet.tokens': expect.any(Number) }));
    }
    // Each sandbox job hangs under the call that queued it: the tester's test run, safety's Bandit scans.
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const ancestorsOf = (span: (typeof spans)[number]): string[] => {
      const names: string[] = [];
      for (let parent = byId.get(span.parentSpanId ?? ''); parent !== undefined; parent = byId.get(parent.parentSpanId ?? '')) names.push(parent.serviceName);
      return names;
    };
    const jobs = spans.filter((span) => span.serviceName === 'sandbox-runner' && span.kind === 5).map(ancestorsOf);
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    for (const ancestors of jobs) expect(ancestors.at(-1)).toBe('cli');
    const testRuns = jobs.filter((ancestors) => ancestors[0] === 'tester');
    expect(testRuns.length).toBeGreaterThanOrEqual(1);
    for (const ancestors of testRuns) expect(ancestors).toEqual(expect.arrayContaining(['tester', 'orchestrator', 'cli']));
    expect(jobs.some((ancestors) => ancestors[0] === 'safety')).toBe(true);
  });
});

describe('traces when the collector hangs', () => {
  let receiver: OtlpReceiver;
  let stack: Stack;
  let dir: string;
  const goal = scriptedGoals('hung', 1)[0]!;
  const exits: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ratchet-traces-hung-'));
    // Takes every export and never answers: each one ends only by the exporter's own timeout.
    receiver = await startOtlpReceiver({ answer: false });
    const script = path.join(dir, 'model-script.json');
    await writeScript(script, [goal]);
    stack = await startStack({ repoRoot, token, env: { RATCHET_MODEL_SCRIPT: script, ...otelEnv(receiver) } });
    for (const [service, children] of stack.processes) for (const child of children) void child.exited.then((exit) => exits.push(`${service} ${JSON.stringify(exit)}`));
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('still runs the task to success, and every service stays up', async () => {
    const run = await ratchet(stack, ['run', goal.goal, '--out', path.join(dir, 'out')], dir, otelEnv(receiver));
    if (run.code !== 0) throw new Error(`ratchet run exited ${run.code}:\n${run.stderr}\n${stack.output().slice(-6000)}`);
    expect(run.stderr).toMatch(/SUCCEEDED after 1 iteration/);
    // The CLI gave up on its last spans instead of waiting on the collector.
    expect(run.stderr).toContain('telemetry: gave up sending the last spans');
    // Spans were really being sent there all along.
    expect(receiver.requests()).toBeGreaterThan(0);
    expect(exits).toEqual([]);

    // And the services still serve: a second command gets its answer.
    const history = await ratchet(stack, ['history', '--json'], dir, otelEnv(receiver));
    expect(history.code).toBe(0);
    expect(exits).toEqual([]);
  });
});
