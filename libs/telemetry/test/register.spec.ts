import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startOtlpReceiver } from '@ratchet/testing';

// The preload runs in a real child process, from the TypeScript sources.
const requireTs = path.join(__dirname, 'fixtures', 'require-ts.cjs');
const register = path.join(__dirname, '..', 'src', 'register.ts');

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Runs `script` with the preload; `signal` is sent once the script prints
 * `ready`. With `file`, the script is written there (under `cwd`) and run as
 * the main script, as a service's `dist/main.js` is.
 */
function runWithPreload(script: string, options: { cwd: string; env?: Record<string, string>; signal?: NodeJS.Signals; file?: string }): Promise<Run> {
  // Only what node needs: no OTEL_* or RATCHET_* from the developer's shell.
  const env = { PATH: process.env['PATH'] ?? '', ...options.env };
  let main = ['-e', script];
  if (options.file !== undefined) {
    const file = path.join(options.cwd, options.file);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, script);
    main = [file];
  }
  const child = spawn(process.execPath, ['--conditions=@ratchet/source', '--require', requireTs, '--require', register, ...main], { cwd: options.cwd, env });
  let stdout = '';
  let stderr = '';
  let signalled = false;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (options.signal && !signalled && stdout.includes('ready')) {
      signalled = true;
      child.kill(options.signal);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ stdout, stderr, code, signal })));
}

// `-e` code resolves modules from the temporary working directory, so it gets the API by path.
const printTraceId = `
  const { trace } = require(${JSON.stringify(require.resolve('@opentelemetry/api'))});
  trace.getTracer('test').startActiveSpan('phase', (span) => { console.log('trace ' + span.spanContext().traceId); span.end(); });
`;

describe('@ratchet/telemetry/register', () => {
  let cwd: string;
  beforeEach(() => {
    cwd = mkdtempSync(path.join(tmpdir(), 'ratchet-telemetry-'));
  });
  afterEach(() => rmSync(cwd, { recursive: true, force: true }));

  it('starts and exits cleanly with nothing configured, and still gives spans ids', async () => {
    const run = await runWithPreload(printTraceId, { cwd });
    expect(run).toEqual(expect.objectContaining({ code: 0, stderr: '' }));
    expect(run.stdout).toMatch(/^trace [0-9a-f]{32}\n$/);
    expect(run.stdout).not.toContain('0'.repeat(32));
  }, 20_000);

  it('keeps the default action of SIGTERM when the app does not handle it', async () => {
    const run = await runWithPreload(`setInterval(() => {}, 1000); console.log('ready');`, { cwd, signal: 'SIGTERM' });
    expect(run).toEqual(expect.objectContaining({ code: null, signal: 'SIGTERM' }));
  }, 20_000);

  it("leaves SIGTERM to the app's own handler", async () => {
    const script = `
      const timer = setInterval(() => {}, 1000);
      process.on('SIGTERM', () => { console.log('draining'); setTimeout(() => clearInterval(timer), 100); });
      console.log('ready');
    `;
    const run = await runWithPreload(script, { cwd, signal: 'SIGTERM' });
    expect(run).toEqual(expect.objectContaining({ code: 0, signal: null, stderr: '' }));
    expect(run.stdout).toContain('draining');
  }, 20_000);

  it('exports to the console when the config asks for it', async () => {
    writeFileSync(path.join(cwd, 'ratchet.yaml'), 'telemetry:\n  tracesExporter: console\n  serviceNamespace: team-a\nbus:\n  anything: goes here\n');
    const run = await runWithPreload(printTraceId, { cwd, env: { RATCHET_CONFIG_DIR: cwd, RATCHET_SERVICE_NAME: 'planner' } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/name: 'phase'/);
    expect(run.stdout).toMatch(/'service\.name': 'planner'/);
    expect(run.stdout).toMatch(/'service\.namespace': 'team-a'/);
  }, 20_000);

  it('lets OTEL_TRACES_EXPORTER win over the config', async () => {
    writeFileSync(path.join(cwd, 'ratchet.yaml'), 'telemetry:\n  tracesExporter: console\n');
    const run = await runWithPreload(printTraceId, { cwd, env: { RATCHET_CONFIG_DIR: cwd, OTEL_TRACES_EXPORTER: 'none' } });
    expect(run).toEqual(expect.objectContaining({ code: 0, stderr: '' }));
    expect(run.stdout).toMatch(/^trace [0-9a-f]{32}\n$/);
  }, 20_000);

  it('runs on, without exporting, when the telemetry config is invalid', async () => {
    writeFileSync(path.join(cwd, 'ratchet.yaml'), 'telemetry:\n  tracesExporter: carrier-pigeon\n');
    const run = await runWithPreload(printTraceId, { cwd, env: { RATCHET_CONFIG_DIR: cwd } });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/telemetry: ignoring the telemetry config.*\n.*telemetry\.tracesExporter/);
    expect(run.stdout).toMatch(/^trace [0-9a-f]{32}\n$/);
  }, 20_000);

  describe('exporting over OTLP/HTTP', () => {
    // A span with a child, so the export carries a parent link and attributes.
    const twoSpans = `
      const { trace } = require(${JSON.stringify(require.resolve('@opentelemetry/api'))});
      trace.getTracer('test').startActiveSpan('phase', (span) => {
        trace.getTracer('test').startActiveSpan('call', { attributes: { 'ratchet.task_id': 't-1', 'ratchet.tokens': 12 } }, (child) => child.end());
        span.end();
      });
    `;

    it.each(['http/protobuf', 'http/json'])('sends spans with %s, named after the service whose main script runs', async (protocol) => {
      const receiver = await startOtlpReceiver();
      try {
        const run = await runWithPreload(twoSpans, { cwd, file: 'services/planner/dist/main.js', env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol } });
        expect(run).toEqual(expect.objectContaining({ code: 0, stderr: '' }));
        // Batched, not sent span by span: both in one export, at exit, before the process ends.
        const spans = receiver.spans();
        expect(receiver.requests()).toBe(1);
        expect(receiver.rejected()).toEqual([]);
        expect(spans.map((span) => span.name).sort()).toEqual(['call', 'phase']);
        const phase = spans.find((span) => span.name === 'phase')!;
        const call = spans.find((span) => span.name === 'call')!;
        expect(phase).toEqual(expect.objectContaining({ serviceName: 'planner', parentSpanId: undefined, kind: 1 }));
        expect(phase.resource['service.namespace']).toBe('ratchet');
        expect(call).toEqual(expect.objectContaining({ traceId: phase.traceId, parentSpanId: phase.spanId, attributes: { 'ratchet.task_id': 't-1', 'ratchet.tokens': 12 } }));
        expect(call.endTimeUnixNano).toBeGreaterThanOrEqual(call.startTimeUnixNano);
      } finally {
        await receiver.stop();
      }
    }, 20_000);

    it('exits with the app, its spans given up, when the collector never answers', async () => {
      const receiver = await startOtlpReceiver({ answer: false });
      try {
        const run = await runWithPreload(`${twoSpans}; process.exitCode = 3;`, { cwd, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, RATCHET_SERVICE_NAME: 'coder' } });
        // The exit code is the app's: losing spans is no failure of its own.
        expect(run.code).toBe(3);
        expect(run.stderr).toContain('telemetry: gave up sending the last spans');
        expect(receiver.requests()).toBeGreaterThanOrEqual(1);
      } finally {
        await receiver.stop();
      }
    }, 30_000);

    it('keeps running, and exits cleanly, when nothing listens where the collector should be', async () => {
      const receiver = await startOtlpReceiver();
      const url = receiver.url;
      await receiver.stop();
      const script = `${twoSpans}; setTimeout(() => console.log('still here'), 200);`;
      const run = await runWithPreload(script, { cwd, env: { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_BSP_SCHEDULE_DELAY: '10' } });
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('still here');
    }, 30_000);
  });
});
