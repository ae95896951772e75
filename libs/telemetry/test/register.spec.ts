import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// The preload runs in a real child process, from the TypeScript sources.
const requireTs = path.join(__dirname, 'fixtures', 'require-ts.cjs');
const register = path.join(__dirname, '..', 'src', 'register.ts');

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Runs `script` with the preload; `signal` is sent once the script prints `ready`. */
function runWithPreload(script: string, options: { cwd: string; env?: Record<string, string>; signal?: NodeJS.Signals }): Promise<Run> {
  // Only what node needs: no OTEL_* or RATCHET_* from the developer's shell.
  const env = { PATH: process.env['PATH'] ?? '', ...options.env };
  const child = spawn(process.execPath, ['--conditions=@ratchet/source', '--require', requireTs, '--require', register, '-e', script], { cwd: options.cwd, env });
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
});
