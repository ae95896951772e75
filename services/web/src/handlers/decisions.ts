import type { FastifyInstance } from 'fastify';
import { AnswerResponse, ApproveResponse } from '@ratchet/contracts';
import { answerRequestOf, approveRequestOf, idOf } from '../domain/requests';
import { callOptionsOf, type HandlerContext } from './context';

/** What people decide for a waiting task: an approval gate, or the reprompter's clarifying questions. */
export function registerDecisionRoutes(server: FastifyInstance, context: HandlerContext): void {
  server.post<{ Params: { taskId: string; gateId: string } }>('/api/tasks/:taskId/approvals/:gateId', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    const approveRequest = approveRequestOf(idOf(request.params.taskId, 'task'), idOf(request.params.gateId, 'gate'), request.body);
    return ApproveResponse.toJSON(await context.orchestrator.approve(approveRequest, options));
  });

  server.post<{ Params: { taskId: string } }>('/api/tasks/:taskId/answers', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    const answerRequest = answerRequestOf(idOf(request.params.taskId, 'task'), request.body);
    return AnswerResponse.toJSON(await context.orchestrator.answer(answerRequest, options));
  });
}
