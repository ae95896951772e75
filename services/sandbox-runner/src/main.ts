import { hostname } from 'node:os';
import path from 'node:path';
import { runnerConfigSection, SANDBOX_JOB_QUEUE, sandboxConfigSection } from '@ratchet/agent';
import { serveFromQueue } from '@ratchet/bus';
import { extendConfigSchema } from '@ratchet/config';
import { RunJobRequest, RunJobResponse, SandboxRunnerServiceDefinition } from '@ratchet/contracts';
import { main, packageVersion } from '@ratchet/runtime';
import { countJobTaken, createSandboxRunnerService, reportRunner, sandboxRunnerOptionsOf } from './index';

// A sandbox runner process: pulls test-run jobs from the JetStream work queue
// (as many as `runner.concurrency` allows) and also answers RunJob RPCs.
// Start more of them to run more jobs at once; nothing else changes.
main({
  name: 'sandbox-runner',
  version: packageVersion(path.join(__dirname, '..')),
  definition: SandboxRunnerServiceDefinition,
  schema: extendConfigSchema({ sandbox: sandboxConfigSection, runner: runnerConfigSection }),
  start: async ({ config, transport, logger }) => {
    const service = createSandboxRunnerService({ ...sandboxRunnerOptionsOf(config.sandbox, `${hostname()}-${process.pid}`), logger });
    // Filled in the background: jobs that come first get fresh containers.
    void service.driver.warm();
    const consumer = await serveFromQueue(
      transport,
      SANDBOX_JOB_QUEUE,
      { request: RunJobRequest, response: RunJobResponse },
      (request, { job, deadline, signal }) => {
        countJobTaken();
        return service.implementation.runJob(request, { requestId: job.id, deadline, signal, headers: job.headers });
      },
      {
        concurrency: config.runner.concurrency,
        ackWaitMs: config.runner.ackWaitMs,
        maxDeliver: config.runner.maxDeliver,
        logger,
        onUndelivered: (jobId, error) => logger.warn({ jobId, err: error.message }, 'the caller of a sandbox job is gone; result dropped'),
        // Its caller asked for the same job again (e.g. a restarted orchestrator re-running the phase), or gave up on it.
        onSkipped: (jobId) => logger.info({ jobId }, 'nobody waits for this sandbox job any more; not run'),
      },
    );
    logger.info({ queue: SANDBOX_JOB_QUEUE, concurrency: config.runner.concurrency, driver: config.sandbox.driver }, 'pulling sandbox jobs');
    reportRunner({ queue: SANDBOX_JOB_QUEUE, warmPoolSize: () => service.driver.warmPoolSize, backlog: () => transport.workQueueBacklog(SANDBOX_JOB_QUEUE) });
    return {
      implementation: service.implementation,
      checks: service.checks,
      // Session calls come to this runner's own subject.
      instance: service.instance,
      close: async (graceMs) => {
        await consumer.stop(graceMs);
        await service.close();
      },
    };
  },
});
