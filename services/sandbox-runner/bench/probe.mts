import { Language, SandboxDriver } from '@ratchet/contracts';
import { DockerDriver } from '@ratchet/sandbox-runner';
import { spawnSync } from 'node:child_process';
const limits = { memoryBytes: 512 << 20, pids: 128, cpus: 1, timeoutMs: 120_000, outputLimitBytes: 256 << 10, workDirBytes: 64 << 20 };
const tests = `from calc import add\n\n\n${Array.from({ length: 10 }, (_, i) => `def test_add_${i}():\n    assert add(${i}, 1) == ${i + 1}\n`).join('\n\n')}`;
const d = new DockerDriver({ defaults: limits, warmPool: 2 });
await d.warm();
for (let i = 0; i < 8; i++) {
  const t = performance.now();
  const r = await d.run({ jobId: `p${i}`, taskId: 't', iteration: 1, language: Language.LANGUAGE_PYTHON, files: [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }, { path: 'tests/test_calc.py', content: tests }], commands: [{ name: 'x', argv: process.argv[2] === 'pass' ? ['python3', '-c', 'pass'] : ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/r.xml', 'tests'], workingDirectory: '', timeout: undefined }], env: {}, limits: undefined, driver: SandboxDriver.SANDBOX_DRIVER_DOCKER, image: '', testReportPath: '/tmp/r.xml', protectedPaths: ['tests/test_calc.py'], enqueuedAt: undefined, deadline: undefined });
  const wall = performance.now() - t;
  const cmd = r.commandResults[0]!.duration!;
  console.log(`wall ${wall.toFixed(1)} startup ${((r.startup?.nanos ?? 0) / 1e6).toFixed(1)} cmd ${(cmd.nanos / 1e6).toFixed(1)} exit ${r.exitCode} tests ${r.testReport?.passed} tampered ${r.tamperedPaths}`);
  await d.warm();
}
await d.close();
