// Round trips of payloads too large for one NATS message: the bus puts them
// as chunks in the JetStream stream RATCHET_PAYLOADS and sends only a
// reference (id, chunks, size, SHA-256). A nats-server with the default max_payload (1 MiB) and a
// file store in a temp directory. Run with `npm run bench` (builds first) or
// `node --require @ratchet/telemetry/register libs/bus/bench/large-payloads.mts [rounds]`
// after `npx nx run @ratchet/bus:build`. Prints a table and a JSON line.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/bus:bench -c smoke`,
// as CI runs it) sends each payload up to 5 MiB once, only to show the bench
// still runs; its figures then mean nothing. A [rounds] given still counts.
import { randomBytes } from 'node:crypto';
// The bench runs the built package (node cannot run the TypeScript sources
// directly), so it imports the package by name rather than by relative path.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { NatsTransport } from '@ratchet/bus';
import { startNatsServer } from '@ratchet/testing';

const MB = 1024 * 1024;
const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const ROUNDS = Number(process.argv[2] ?? (smoke ? 1 : 5));

interface Scenario {
  readonly name: string;
  readonly requestBytes: number;
  readonly replyBytes: number;
  /** Force the payload stream below max_payload, to compare with the same bytes inline. */
  readonly inlineLimitBytes?: number;
}

const scenarios: Scenario[] = [
  { name: '512 KiB both ways, inline', requestBytes: MB / 2, replyBytes: MB / 2 },
  { name: '512 KiB both ways, payload stream', requestBytes: MB / 2, replyBytes: MB / 2, inlineLimitBytes: 1024 },
  { name: '5 MiB request, small reply', requestBytes: 5 * MB, replyBytes: 16 },
  { name: '5 MiB both ways', requestBytes: 5 * MB, replyBytes: 5 * MB },
  // A smoke run leaves these out: the 5 MiB ones already go through the payload stream both ways, in a tenth of the time.
  ...(smoke
    ? []
    : [
        { name: '40 MiB request, small reply', requestBytes: 40 * MB, replyBytes: 16 },
        { name: '40 MiB both ways', requestBytes: 40 * MB, replyBytes: 40 * MB },
      ]),
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function main(): Promise<void> {
  const server = await startNatsServer();
  const results: Record<string, { medianMs: number; minMs: number; mbPerSecond: number }> = {};
  try {
    for (const scenario of scenarios) {
      const options = { url: server.url, ...(scenario.inlineLimitBytes === undefined ? {} : { inlineLimitBytes: scenario.inlineLimitBytes }) };
      const caller = await NatsTransport.connect({ ...options, name: 'bench-caller' });
      const responder = await NatsTransport.connect({ ...options, name: 'bench-responder' });
      const reply = new Uint8Array(randomBytes(scenario.replyBytes));
      const request = new Uint8Array(randomBytes(scenario.requestBytes));
      responder.subscribe('bench.large', { queue: 'bench' }, (incoming) => incoming.respond(reply));
      await responder.flush();
      const call = async () => {
        const answer = await caller.request('bench.large', request, { timeoutMs: 120_000 });
        if (answer.data.length !== reply.length) throw new Error(`reply of ${answer.data.length} bytes, expected ${reply.length}`);
      };
      await call(); // warm-up: creates and checks the payload stream
      const samples: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const started = process.hrtime.bigint();
        await call();
        samples.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
      const medianMs = median(samples);
      results[scenario.name] = { medianMs, minMs: Math.min(...samples), mbPerSecond: (scenario.requestBytes + scenario.replyBytes) / MB / (medianMs / 1000) };
      await caller.close();
      await responder.close();
    }
  } finally {
    await server.stop();
  }
  console.log(`\nLarge payload round trip, ${ROUNDS} rounds each, nats-server max_payload 1 MiB, file store (Node ${process.version})`);
  console.log('scenario                            median ms   min ms   MiB/s moved');
  for (const [name, result] of Object.entries(results)) {
    console.log(`${name.padEnd(34)} ${result.medianMs.toFixed(1).padStart(10)} ${result.minMs.toFixed(1).padStart(8)} ${result.mbPerSecond.toFixed(0).padStart(9)}`);
  }
  console.log(JSON.stringify({ bench: 'large-payloads', rounds: ROUNDS, results }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
