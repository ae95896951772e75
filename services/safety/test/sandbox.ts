import { existsSync } from 'node:fs';
import path from 'node:path';
import { SANDBOX_JOB_QUEUE } from '@ratchet/agent';
import { createQueueCaller, NatsTransport } from '@ratchet/bus';
import { RunJobRequest, RunJobResponse } from '@ratchet/contracts';
import { startNatsServer, startNodeProcess, type NatsServerFixture, type NodeProcessFixture } from '@ratchet/testing';
import type { SandboxJobs } from '../src';

const repoRoot = path.resolve(__dirname, '..', '..', '..');
const runnerScript = path.join(repoRoot, 'services', 'sandbox-runner', 'dist', 'main.js');

/** A real sandbox for the safety tests, reached the way the distributed safety process reaches it. */
export interface SandboxFixture {
  /** Jobs go on the sandbox work queue of a real nats-server; a real sandbox-runner process runs them in Docker. */
  readonly sandbox: SandboxJobs;
  /** The nats-server the runner pulls jobs from, for processes that enqueue their own. */
  readonly natsUrl: string;
  /** How many jobs went through `sandbox`. */
  readonly jobs: () => number;
  /** The runner's output, for a failing test's message. */
  readonly output: () => string;
  stop(): Promise<void>;
}

/**
 * Starts nats-server and one sandbox-runner process (its built main.js, the
 * Docker driver, the sandbox image) and returns a caller of the sandbox job
 * queue, as services/safety/src/main.ts builds it. The safety `test` target
 * builds the runner first.
 *
 * @throws Error saying what to run when the runner is not built or does not start.
 */
export async function startSandbox(options: { readonly concurrency?: number } = {}): Promise<SandboxFixture> {
  if (!existsSync(runnerScript)) throw new Error(`${runnerScript} is missing; run npx nx run @ratchet/sandbox-runner:build`);
  let nats: NatsServerFixture | undefined;
  let runner: NodeProcessFixture | undefined;
  let transport: NatsTransport | undefined;
  const stop = async () => {
    await runner?.terminate('SIGTERM', 20_000);
    await transport?.close();
    await nats?.stop();
  };
  try {
    nats = await startNatsServer();
    runner = await startNodeProcess({
      script: runnerScript,
      cwd: repoRoot,
      env: {
        RATCHET_CONFIG_DIR: path.join(repoRoot, 'config'),
        RATCHET_BUS_NATS_URL: nats.url,
        RATCHET_RUNNER_CONCURRENCY: String(options.concurrency ?? 2),
        RATCHET_SANDBOX_WARM_POOL: '1',
      },
    });
    await runner.waitForLine(/"msg":"ready"/, 30_000).catch(async (error: unknown) => {
      throw new Error(`the sandbox runner did not start (${(error as Error).message}); is Docker up and ratchet-sandbox:3 built? (tools/ensure-docker.sh)`);
    });
    transport = await NatsTransport.connect({ url: nats.url, name: 'safety-test' });
    const caller = createQueueCaller(transport, SANDBOX_JOB_QUEUE, { request: RunJobRequest, response: RunJobResponse });
    let jobs = 0;
    const started = runner;
    const natsUrl = nats.url;
    return {
      natsUrl,
      sandbox: {
        runJob(request, callOptions) {
          jobs += 1;
          return caller.call(request.job?.jobId ?? '', request, callOptions);
        },
      },
      jobs: () => jobs,
      output: () => started.output(),
      stop: async () => {
        await caller.close();
        await stop();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
