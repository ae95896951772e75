import path from 'node:path';
import { SANDBOX_JOB_QUEUE } from '@ratchet/agent';
import { createQueueCaller, DroppedResult } from '@ratchet/bus';
import { RunJobRequest, RunJobResponse, SafetyServiceDefinition } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { main, packageVersion } from '@ratchet/runtime';
import { BanditMode, codeCheckOf, commandPolicyOf, createSafetyService, loadDependencyPolicy, safetyConfigSchema, sandboxImagePackages } from './index';

// The grammars ship with the package; the command policy is the `commands` section of config/safety.yaml,
// the dependency policy config/dependencies.yaml in the same directory (RATCHET_CONFIG_DIR), the code
// policy the `code` section; Bandit runs as a job on the sandbox work queue.
main({
  name: 'safety',
  version: packageVersion(path.join(__dirname, '..')),
  definition: SafetyServiceDefinition,
  schema: safetyConfigSchema,
  start: async ({ config, transport, logger }) => {
    const code = codeCheckOf(config.code);
    // CheckCode's Bandit job goes on the sandbox work queue, like the tester's test runs.
    const jobs =
      code.bandit === BanditMode.OFF
        ? undefined
        : createQueueCaller(transport, SANDBOX_JOB_QUEUE, { request: RunJobRequest, response: RunJobResponse }, { onDropped: (dropped) => logger[dropped.reason === DroppedResult.UNSIGNED ? 'warn' : 'debug'](dropped, 'sandbox result dropped') });
    const sandbox =
      jobs === undefined
        ? undefined
        : {
            async runJob(request: RunJobRequest, options: { deadline: number; signal: AbortSignal }) {
              const jobId = request.job?.jobId ?? '';
              if (jobId === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'job.job_id is empty');
              return jobs.call(jobId, request, options);
            },
          };
    // The tests run in sandbox.image: what config/dependencies.yaml says that image has is not installed.
    const dependencyPolicy = loadDependencyPolicy(undefined, process.env, { sandboxImage: config.sandbox.image });
    const image = sandboxImagePackages(dependencyPolicy);
    logger.info(
      { sandboxImage: dependencyPolicy.sandboxImage, imagePackages: image === undefined ? 0 : image.python.length + image.npm.length },
      image === undefined ? `dependency policy: ${dependencyPolicy.source} lists no packages of ${dependencyPolicy.sandboxImage}; only its provided lists count` : `dependency policy: the packages ${dependencyPolicy.source} lists for ${image.image} count as provided`,
    );
    const safety = await createSafetyService({ commandPolicy: commandPolicyOf(config.commands), dependencyPolicy, code, ...(sandbox === undefined ? {} : { sandbox }) });
    return {
      implementation: safety.implementation,
      close: async () => {
        await jobs?.close();
        await safety.close();
      },
    };
  },
});
