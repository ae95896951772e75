import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ratchetArgv, temporaryDirectory } from './helpers';

// `ratchet sandbox run` as a user runs it: the built bin, a real Docker engine
// and real bubblewrap (tools/ensure-docker.sh, tools/ensure-sandbox-rootfs.sh).
jest.setTimeout(120_000);

describe('ratchet sandbox run', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    await mkdir(path.join(dir, 'work', 'tests'), { recursive: true });
    await writeFile(path.join(dir, 'work', 'calc.py'), 'def add(a, b):\n    return a - b\n');
    await writeFile(path.join(dir, 'work', 'tests', 'test_calc.py'), 'from calc import add\n\ndef test_ok():\n    assert add(2, 0) == 2\n\ndef test_bad():\n    assert add(2, 3) == 5\n');
  });
  afterAll(async () => {
    await remove();
  });

  function ratchet(args: string[]) {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('RATCHET_')));
    const result = spawnSync(process.execPath, ratchetArgv(['sandbox', 'run', ...args]), { cwd: dir, env: clean, encoding: 'utf8', timeout: 60_000 });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  it.each(['docker', 'bwrap'])('runs the tests of a directory on %s and prints the report as JSON', (driver) => {
    const result = ratchet(['work', '--driver', driver, '--json']);
    expect(result.status).toBe(1);
    const printed = JSON.parse(result.stdout) as Record<string, unknown> & { testReport: { total: number; passed: number; failed: number; cases: { name: string; status: string }[] } };
    expect(printed).toMatchObject({ driver, exitCode: 1, timedOut: false, oomKilled: false, stdoutTruncated: false, tamperedPaths: [], rejectedOutputs: [] });
    expect(printed.testReport).toMatchObject({ parsed: true, total: 2, passed: 1, failed: 1 });
    expect(printed.testReport.cases.find((testCase) => testCase.name === 'test_bad')?.status).toBe('failed');
    expect(printed['stdout']).toContain('1 failed, 1 passed');
  });

  it('runs a given command, strips terminal escapes and says when it timed out', () => {
    const printed = ratchet(['work', '--driver', 'bwrap', '--json', '--', 'sh', '-c', 'printf "\\033]0;title\\007\\033[31mred\\n"; exit 3']);
    expect(printed.status).toBe(1);
    expect(JSON.parse(printed.stdout)).toMatchObject({ exitCode: 3, stdout: 'red\n', testReport: { parsed: false } });
    const slow = ratchet(['work', '--driver', 'docker', '--timeout', '1', '--', 'sleep', '30']);
    expect(slow.status).toBe(1);
    expect(slow.stderr).toMatch(/exit -1 \(timed out\) · [\d.]+ s · docker sandbox/);
    const passing = ratchet(['work', '--driver', 'bwrap', '--', 'python3', '-c', 'print("fine")']);
    expect(passing.status).toBe(0);
    expect(passing.stdout).toBe('fine\n');
    expect(passing.stderr).toMatch(/exit 0 · [\d.]+ s · bwrap sandbox/);
  });

  it('explains bad arguments', () => {
    expect(ratchet(['work', '--driver', 'lxc']).stderr).toContain('--driver lxc: use docker or bwrap');
    expect(ratchet(['missing']).stderr).toContain('missing: not a directory');
    expect(ratchet(['work', '--timeout', '0']).stderr).toContain('--timeout 0: use whole seconds from 1 to 3600');
    expect(ratchet(['work/tests', '--lang', 'typescript']).stderr).toContain('has no test files');
  });
});
