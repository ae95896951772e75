// `npm run stack`: distributed Ratchet on this machine for development. Starts
// a nats-server (JetStream), a Postgres and every service as its own process,
// prints how to reach the orchestrator, restarts a service that dies, and
// stops everything on Ctrl-C.
// Usage: npm run stack [-- --runners N] [--port 50051] [--token T] [--script FILE]
// A model comes from config/models.yaml or RATCHET_MODEL_* (see the README);
// --script FILE replays a scripted model instead (RATCHET_MODEL_SCRIPT).
import { parseArgs } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '@ratchet/testing';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    runners: { type: 'string', default: '2' },
    port: { type: 'string', default: '50051' },
    token: { type: 'string', default: process.env.RATCHET_TOKEN ?? '' },
    script: { type: 'string' },
  },
});
const runners = Number(values.runners);
const port = Number(values.port);
if (!Number.isInteger(runners) || runners < 1 || !Number.isInteger(port) || port < 1 || port > 65535) {
  console.error('stack: --runners needs a whole number >= 1 and --port a TCP port');
  process.exit(2);
}
// Readiness is read from each service's "ready" log line, which is at info level.
const env = { RATCHET_LOG_LEVEL: 'info' };
if (values.script) env.RATCHET_MODEL_SCRIPT = path.resolve(values.script);

console.log(`starting nats-server, Postgres and ${7 + runners} service processes...`);
let stack;
try {
  stack = await startStack({
    repoRoot,
    runners,
    grpcPort: port,
    ...(values.token ? { token: values.token } : {}),
    env,
    // A service that dies is started again, as a container runtime would: tasks wait for it rather than fail.
    restart: true,
    onStarted: (name, child) => console.log(`  ${name} ready (pid ${child.pid})`),
    onExited: (name, exit, restartInMs) =>
      console.log(`${name} ${exit.signal === null ? `exited with code ${exit.code}` : `was killed (${exit.signal})`}; restarting in ${Math.round(restartInMs / 100) / 10} s`),
    onRestarted: (name, child) => console.log(`${name} restarted (pid ${child.pid})`),
  });
} catch (error) {
  console.error(`stack: could not start: ${error.message}`);
  process.exit(1);
}
console.log(`\nRatchet is up: gRPC ${stack.grpcAddress}, NATS ${stack.nats.url}, Postgres ${stack.postgres.connectionString}`);
console.log(`Try: npx ratchet run "a CLI that manages TODO items in JSON" --server ${stack.grpcAddress}${values.token ? ' --token ...' : ''}`);
console.log('Ctrl-C stops everything.');

// The service processes do not keep this one alive by themselves; stay until Ctrl-C.
const keepAlive = setInterval(() => {}, 1 << 30);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  console.log('\nstopping...');
  await stack.stop();
  clearInterval(keepAlive);
  console.log('stopped');
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
