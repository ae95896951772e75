import {
  assertPlaceholders,
  citedLessonIds,
  callRole,
  failureSignature,
  formatDisputes,
  formatFiles,
  formatFindings,
  formatLessons,
  formatPlan,
  formatReflections,
  formatReviewFindings,
  formatTestReport,
  languageFromProto,
  type RolePrompt,
} from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { ReflectRequest, ReflectResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { reflectionReplySchema } from '../domain/reflection-reply';

const placeholders = ['goal', 'plan', 'files', 'testReport', 'safetyFindings', 'reviewFindings', 'stderr', 'previousReflections', 'lessons', 'testDisputes'];

/**
 * Reflect: failing code + test report + safety findings (+ blocking review
 * and audit findings, treated like a failing test) -> root cause,
 * hypothesis, what to change and a candidate lesson carrying the failure's
 * signature.
 *
 * A reply that stays invalid after its repair round comes back as
 * `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for a request without goal or language.
 */
export function reflectHandler(roleModel: RoleModel, prompt: RolePrompt) {
  assertPlaceholders('reflector', prompt, placeholders);
  return async (request: ReflectRequest, context: CallContext): Promise<ReflectResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; the reflector needs the goal the attempt failed');
    languageFromProto(request.language);
    const signature = failureSignature(request.testReport, request.error, request.safetyFindings);
    const errorText = request.error === undefined || request.error.message === '' ? '' : `\nPhase error: ${request.error.code}: ${request.error.message}`;
    const reply = await callRole({
      role: ChatRole.REFLECTOR,
      roleModel,
      prompt,
      values: {
        goal: request.goal,
        plan: formatPlan(request.plan),
        files: formatFiles(request.files),
        testReport: formatTestReport(request.testReport) + errorText,
        safetyFindings: formatFindings(request.safetyFindings),
        // Blocking review and audit findings count like a failing test.
        reviewFindings: formatReviewFindings(request.reviewFindings),
        stderr: outputForPrompt(request),
        previousReflections: formatReflections(request.previousReflections),
        lessons: formatLessons(request.lessons),
        testDisputes: formatDisputes(request.testDisputes),
      },
      schema: reflectionReplySchema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    if (!reply.ok) return { reflection: undefined, usage: reply.usage, replyFailure: reply.failure };
    const { value, usage } = reply;
    return {
      reflection: {
        rootCause: value.rootCause,
        hypothesis: value.hypothesis,
        fixDirection: value.fixDirection,
        candidateLesson: { title: value.lesson.title, body: value.lesson.body, errorSignature: signature, tags: value.lesson.tags, language: request.language },
        errorSignature: signature,
        confidence: value.confidence,
        replanRecommended: value.replanRecommended,
        relevantLessonIds: citedLessonIds(value.relevantLessonIds, request.lessons),
        disputedTests: value.disputedTests,
      },
      usage,
      replyFailure: undefined,
    };
  };
}

/**
 * The run's raw output, only where it adds to the test report: when the
 * report was parsed and holds the failures with their tracebacks, the same
 * text again would only crowd the prompt.
 */
export function outputForPrompt(request: Pick<ReflectRequest, 'testReport' | 'stderrExcerpt'>): string {
  const report = request.testReport;
  const failures = (report?.cases ?? []).filter((testCase) => testCase.failureMessage !== '' || testCase.failureDetail !== '');
  if (report?.parsed === true && failures.length > 0) return '(left out: the test report above has each failure with its traceback)';
  return request.stderrExcerpt === '' ? '(empty)' : request.stderrExcerpt;
}
