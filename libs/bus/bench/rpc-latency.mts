// RPC round-trip latency: the bus over NATS and in-process, next to a bare
// `nats` request/reply measured in the same run against the same server.
// Run with `npm run bench` (builds first) or
// `node --require @ratchet/telemetry/register libs/bus/bench/rpc-latency.mts [calls]`
// after `npx nx run @ratchet/bus:build`. Prints a table and a JSON line.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/bus:bench -c smoke`,
// as CI runs it) makes 40 calls per scenario after 10 warm-ups, only to show
// the bench still runs; its figures then mean nothing. A [calls] given still counts.
import { connect } from '@nats-io/transport-node';
// The bench runs the built package (node cannot run the TypeScript sources
// directly), so it imports the package by name rather than by relative path.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createClient, InProcessTransport, NatsTransport, serveService } from '@ratchet/bus';
// eslint-disable-next-line @nx/enforce-module-boundaries
import type { Transport } from '@ratchet/bus';
import { HealthStatus, PlannerServiceDefinition } from '@ratchet/contracts';
import { startNatsServer } from '@ratchet/testing';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const CALLS = Number(process.argv[2] ?? (smoke ? 40 : 2000));
const WARMUP = smoke ? 10 : 200;
const ROUNDS = 4;

type Sample = number[];

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] as number;
}

function summary(samples: Sample) {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return { calls: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean };
}

async function time(samples: Sample, count: number, call: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint();
    await call();
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
}

function serveHealth(transport: Transport) {
  return serveService(transport, PlannerServiceDefinition, {
    health: async () => ({ service: 'planner', version: 'bench', status: HealthStatus.HEALTH_STATUS_SERVING, uptime: undefined, dependencies: [], instanceId: 'bench', checkedAt: new Date() }),
  }, { queue: 'planner' });
}

async function main(): Promise<void> {
  const server = await startNatsServer();
  const bare = await connect({ servers: server.url });
  const payload = new Uint8Array(64);
  bare.subscribe('bench.bare', { callback: (_error, message) => void message.respond(message.data) });

  const busNats = await NatsTransport.connect({ url: server.url, name: 'bench' });
  const natsServer = serveHealth(busNats);
  const natsClient = createClient(busNats, PlannerServiceDefinition, { maxAttempts: 1 });

  const inProcess = new InProcessTransport();
  const inProcessServer = serveHealth(inProcess);
  const inProcessClient = createClient(inProcess, PlannerServiceDefinition, { maxAttempts: 1 });

  const scenarios: Record<string, () => Promise<unknown>> = {
    'bare nats request/reply': () => bare.request('bench.bare', payload, { timeout: 5000 }),
    'bus over nats': () => natsClient.health({}),
    'bus in-process': () => inProcessClient.health({}),
  };
  const samples: Record<string, Sample> = {};
  for (const [name, call] of Object.entries(scenarios)) {
    samples[name] = [];
    await time([], WARMUP, call);
  }
  // Interleave rounds so drift on a shared machine hits every scenario alike.
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, call] of Object.entries(scenarios)) await time(samples[name] as Sample, CALLS / ROUNDS, call);
  }

  const results = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, summary(values)]));
  const bareP50 = results['bare nats request/reply']!.p50;
  console.log(`\nRPC round trip, ${CALLS} calls per scenario (Node ${process.version})`);
  console.log('scenario                    p50 ms   p99 ms  mean ms  p50 vs bare');
  for (const [name, result] of Object.entries(results)) {
    console.log(`${name.padEnd(26)} ${result.p50.toFixed(3).padStart(7)} ${result.p99.toFixed(3).padStart(8)} ${result.mean.toFixed(3).padStart(8)}  ${(result.p50 / bareP50).toFixed(2)}x`);
  }
  const overhead = results['bus over nats']!.p50 - bareP50;
  console.log(`bus overhead over bare NATS at p50: ${overhead.toFixed(3)} ms (goal < 0.2 ms)`);
  console.log(JSON.stringify({ bench: 'rpc-latency', calls: CALLS, results, busOverheadP50Ms: overhead }));

  await natsServer.drain(1000);
  await inProcessServer.drain(1000);
  await inProcess.close();
  await busNats.close();
  await bare.close();
  await server.stop();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
