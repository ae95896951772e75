import {
  assertPlaceholders,
  callRole,
  formatFiles,
  formatFindings,
  formatLessons,
  formatPlan,
  formatReflections,
  formatTestReport,
  languageFromProto,
  type RolePrompt,
} from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { ReflectRequest, ReflectResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { failureSignature } from '../domain/failure-signature';
import { reflectionReplySchema } from '../domain/reflection-reply';

const placeholders = ['goal', 'plan', 'files', 'testReport', 'safetyFindings', 'stderr', 'previousReflections', 'lessons'];

/**
 * Reflect: failing code + test report + safety findings -> root cause,
 * hypothesis, what to change and a candidate lesson carrying the failure's
 * signature.
 *
 * @throws AppError INVALID_ARGUMENT for a request without goal or language, or
 *   a model reply that stays invalid after one repair round.
 */
export function reflectHandler(roleModel: RoleModel, prompt: RolePrompt) {
  assertPlaceholders('reflector', prompt, placeholders);
  return async (request: ReflectRequest, context: CallContext): Promise<ReflectResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; the reflector needs the goal the attempt failed');
    languageFromProto(request.language);
    const signature = failureSignature(request.testReport, request.error, request.safetyFindings);
    const errorText = request.error === undefined || request.error.message === '' ? '' : `\nPhase error: ${request.error.code}: ${request.error.message}`;
    const { value, usage } = await callRole({
      role: ChatRole.REFLECTOR,
      roleModel,
      prompt,
      values: {
        goal: request.goal,
        plan: formatPlan(request.plan),
        files: formatFiles(request.files),
        testReport: formatTestReport(request.testReport) + errorText,
        safetyFindings: formatFindings(request.safetyFindings),
        stderr: request.stderrExcerpt === '' ? '(empty)' : request.stderrExcerpt,
        previousReflections: formatReflections(request.previousReflections),
        lessons: formatLessons(request.lessons),
      },
      schema: reflectionReplySchema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    const offered = new Set(request.lessons.map((lesson) => lesson.id));
    return {
      reflection: {
        rootCause: value.rootCause,
        hypothesis: value.hypothesis,
        fixDirection: value.fixDirection,
        candidateLesson: { title: value.lesson.title, body: value.lesson.body, errorSignature: signature, tags: value.lesson.tags, language: request.language },
        errorSignature: signature,
        confidence: value.confidence,
        replanRecommended: value.replanRecommended,
        relevantLessonIds: value.relevantLessonIds.filter((id) => offered.has(id)),
      },
      usage,
    };
  };
}
