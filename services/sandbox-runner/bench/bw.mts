import { Language, SandboxDriver } from '@ratchet/contracts';
import { BubblewrapDriver } from '@ratchet/sandbox-runner';
const limits = { memoryBytes: 256 << 20, pids: 64, cpus: 1, timeoutMs: 20_000, outputLimitBytes: 64 << 10, workDirBytes: 16 << 20 };
const d = new BubblewrapDriver({ defaults: limits, warmPool: Number(process.argv[2] ?? 0) }); await d.warm();
console.log(await d.ping());
const tests = `from calc import add\n\n\n${Array.from({ length: 10 }, (_, i) => `def test_add_${i}():\n    assert add(${i}, 1) == ${i + 1}\n`).join('\n\n')}`;
for (const argv of [['sh','-c','id; echo $HOME; ls -la /work; cat /proc/1/environ | tr "\\0" " "; echo; touch /x || echo ro; ls /sys/fs/cgroup; cat /proc/self/cgroup'], ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--junitxml=/tmp/r.xml', 'tests'], ['python3','-c','x = bytearray(400 << 20)']]) {
  const t = performance.now();
  const r = await d.run({ jobId: `b${Math.random().toString(36).slice(2)}`, taskId: 't', iteration: 1, language: Language.LANGUAGE_PYTHON, files: [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }, { path: 'tests/test_calc.py', content: tests }], commands: [{ name: 'x', argv, workingDirectory: '', timeout: undefined }], env: {}, limits: undefined, driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED, image: '', testReportPath: '/tmp/r.xml', protectedPaths: ['tests/test_calc.py'], enqueuedAt: undefined, deadline: undefined });
  console.log(`wall ${(performance.now() - t).toFixed(1)} startup ${((r.startup?.nanos ?? 0) / 1e6).toFixed(1)} exit ${r.exitCode} oom ${r.oomKilled} tests ${r.testReport?.passed}/${r.testReport?.total} ${r.testReport?.parseError}`);
  await d.warm(); console.log(r.stdout.toString().slice(0, 1500), r.stderr.toString().slice(0, 800));
}
