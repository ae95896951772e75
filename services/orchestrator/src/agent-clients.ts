import { createClient, type Transport } from '@ratchet/bus';
import {
  CoderServiceDefinition,
  MemoryServiceDefinition,
  PlannerServiceDefinition,
  ReflectorServiceDefinition,
  SafetyServiceDefinition,
  TesterServiceDefinition,
} from '@ratchet/contracts';
import type { AgentClients } from './runner/phases';

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
  };
}
