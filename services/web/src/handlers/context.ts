import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Authenticator } from '@ratchet/grpc-api';
import type { OrchestratorApi, OrchestratorCallOptions } from '../orchestrator-api';

/** What every route handler works with. */
export interface HandlerContext {
  readonly orchestrator: OrchestratorApi;
  /** Embedded mode checks the token here; otherwise the orchestrator does. */
  readonly authenticate?: Authenticator;
  readonly traceUrlTemplate?: string;
  /** Open event streams, ended when the gateway shuts down. */
  readonly streams: Set<AbortController>;
  /** Where people get their tokens, for the sign-in messages. */
  readonly tokenHint?: string;
}

/**
 * The bearer token of a request, or undefined without an Authorization header.
 *
 * @throws AppError INVALID_ARGUMENT for an Authorization header that is not `Bearer <token>`.
 */
export function bearerTokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined || header.trim() === '') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (match === null) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'the Authorization header must be "Bearer <token>"');
  return match[1];
}

/**
 * How to call the orchestrator for `request`: with its token (checked here
 * first when the gateway authenticates itself), and a signal that aborts
 * when the browser goes away before the answer.
 *
 * @throws AppError UNAUTHENTICATED for a malformed, missing or unknown token (embedded mode).
 */
export function callOptionsOf(context: HandlerContext, request: FastifyRequest, reply: FastifyReply): OrchestratorCallOptions & { readonly signal: AbortSignal } {
  const token = bearerTokenOf(request);
  context.authenticate?.({ ...(token === undefined ? {} : { token }), certificateNames: [] });
  const controller = new AbortController();
  reply.raw.once('close', () => controller.abort());
  // Embedded mode knows the caller already; the orchestrator behind it is in this process and trusts it.
  return { ...(token === undefined || context.authenticate !== undefined ? {} : { token }), signal: controller.signal };
}
