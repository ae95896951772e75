import { OrchestratorServiceDefinition } from '@ratchet/contracts';
import { createGrpcClient } from '@ratchet/grpc-api';
import type { OrchestratorApi } from '../orchestrator-api';

export interface GrpcOrchestratorOptions {
  /** TLS to the orchestrator: `caFile` verifies its certificate; `{}` uses the system's CAs. Without it, plaintext. */
  readonly tls?: { readonly caFile?: string };
  /** Deadline of a unary call, ms. Default 30000. */
  readonly defaultTimeoutMs?: number;
}

/**
 * The orchestrator's gRPC API at `address` (host:port), shared by every
 * browser: each call carries its caller's own bearer token, so the
 * orchestrator authenticates and authorises each person exactly as it does
 * the CLI. Failures arrive as AppError with the orchestrator's code.
 *
 * @throws AppError CONFIG_INVALID when the CA file cannot be read.
 */
export function grpcOrchestrator(address: string, options: GrpcOrchestratorOptions = {}): OrchestratorApi & { close(): void } {
  return createGrpcClient(OrchestratorServiceDefinition, address, { ...(options.tls === undefined ? {} : { tls: options.tls }), defaultTimeoutMs: options.defaultTimeoutMs ?? 30_000 });
}
