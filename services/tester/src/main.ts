import path from 'node:path';
import { configDirectoryOf, SANDBOX_JOB_QUEUE, sandboxConfigSection, sandboxLimitsOf, testerConfigSection } from '@ratchet/agent';
import { loadPrompts } from '@ratchet/prompting';
import { createQueueCaller, DroppedResult } from '@ratchet/bus';
import { extendConfigSchema } from '@ratchet/config';
import { RunJobRequest, RunJobResponse, TesterServiceDefinition } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, createRoleModel, modelConfigSection, pricesConfigSection } from '@ratchet/llm';
import { main, packageVersion } from '@ratchet/runtime';
import { createTesterService } from './index';

// The tester as its own process: its model and prompt budget (config/tester.yaml) from config, and test runs as jobs on the
// sandbox work queue, so whichever sandbox-runner process has room takes each one.
main({
  name: 'tester',
  // It holds the model's key: its replies and errors are redacted before they leave (a provider may echo the key).
  redactReplies: true,
  version: packageVersion(path.join(__dirname, '..')),
  definition: TesterServiceDefinition,
  schema: extendConfigSchema({ model: modelConfigSection, prices: pricesConfigSection, sandbox: sandboxConfigSection, tester: testerConfigSection }),
  optionalFiles: ['models.yaml'],
  start: async ({ config, transport, logger }) => {
    const roleModel = await createRoleModel(config.model, config.prices, ChatRole.TESTER);
    const jobs = createQueueCaller(
      transport,
      SANDBOX_JOB_QUEUE,
      { request: RunJobRequest, response: RunJobResponse },
      // A result without the job's signature did not come from the runner that ran it: never trusted, always visible.
      { onDropped: (dropped) => logger[dropped.reason === DroppedResult.UNSIGNED ? 'warn' : 'debug'](dropped, 'sandbox result dropped') },
    );
    const tester = createTesterService({
      roleModel,
      prompts: loadPrompts(configDirectoryOf()),
      sandbox: {
        async runJob(request, options) {
          const jobId = request.job?.jobId ?? '';
          if (jobId === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'job.job_id is empty');
          return jobs.call(jobId, request, options);
        },
      },
      limits: sandboxLimitsOf(config.sandbox),
      image: config.sandbox.image,
      settings: config.tester,
    });
    return {
      implementation: tester.implementation,
      close: async () => {
        await jobs.close();
        await tester.close();
      },
    };
  },
});
