import { randomUUID } from 'node:crypto';
import { createClient, errorToHeaders, Subjects, type Transport } from '@ratchet/bus';
import {
  CoderServiceDefinition,
  MemoryServiceDefinition,
  PlannerServiceDefinition,
  ReflectorServiceDefinition,
  SafetyServiceDefinition,
  TesterServiceDefinition,
  ToolCalled,
} from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { AgentClients, ProgressListener } from './runner/phases';

/**
 * The clients of the services the loop calls, on `transport`: the
 * orchestrator process (over NATS) and the CLI's embedded mode (in
 * process) wire them the same way. Model-backed calls get the model
 * deadline and are not retried by the bus: a retry would be a second, paid
 * model call with the same prompt.
 */
export function agentClients(transport: Transport, modelCallTimeoutMs: number): AgentClients {
  const modelClient = { defaultTimeoutMs: modelCallTimeoutMs, maxAttempts: 1 };
  return {
    planner: createClient(transport, PlannerServiceDefinition, modelClient),
    coder: createClient(transport, CoderServiceDefinition, modelClient),
    tester: createClient(transport, TesterServiceDefinition, modelClient),
    reflector: createClient(transport, ReflectorServiceDefinition, modelClient),
    safety: createClient(transport, SafetyServiceDefinition),
    memory: createClient(transport, MemoryServiceDefinition),
    progress: progressListener(transport),
  };
}

/**
 * Tool steps over the bus: a subject per coding phase
 * (`Subjects.progress(task, random)`) that the coder sends each step to
 * and waits on; the reply comes once the step is stored, or carries the error.
 */
export function progressListener(transport: Transport): ProgressListener {
  return {
    async listen(taskId, onStep) {
      const subject = Subjects.progress(taskId, randomUUID().slice(0, 8));
      // Steps are stored one at a time, in the order they came.
      let chain = Promise.resolve();
      const subscription = transport.subscribe(subject, { queue: 'orchestrator-progress' }, (request) => {
        chain = chain.then(async () => {
          try {
            const { step } = ToolCalled.decode(request.data);
            if (step === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'a tool step message without its step');
            await onStep(step);
            request.respond(new Uint8Array());
          } catch (error) {
            request.respond(new Uint8Array(), errorToHeaders(AppError.from(error)));
          }
        });
      });
      await transport.flush();
      return {
        subject,
        close: async () => {
          await subscription.unsubscribe();
          await chain;
        },
      };
    },
  };
}
