import { spawn } from 'node:child_process';
import { JobCgroup } from '../dist/adapters/cgroup.js';
const limits = { memoryBytes: 256 << 20, pids: 64, cpus: 1, timeoutMs: 20_000, outputLimitBytes: 64 << 10, workDirBytes: 16 << 20 };
for (let i = 0; i < 5; i++) {
  let t = performance.now();
  const g = await JobCgroup.create(`x${i}`, limits);
  const c = performance.now() - t;
  t = performance.now();
  const child = spawn('/bin/sh', ['-c', 'read -r go && exec "$@"', 'sh', '/bin/true'], { stdio: ['pipe', 'pipe', 'pipe'], env: {}, uid: 10001, gid: 10001 });
  const s = performance.now() - t;
  await g.add(child.pid!);
  child.stdin.end('go\n');
  await new Promise((r) => child.on('close', r));
  const e = performance.now() - t;
  t = performance.now();
  await g.remove();
  console.log(`create ${c.toFixed(1)} spawn ${s.toFixed(1)} spawn..exit ${e.toFixed(1)} remove ${(performance.now() - t).toFixed(1)}`);
}
