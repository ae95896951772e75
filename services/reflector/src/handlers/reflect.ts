import { failureSignature, languageFromProto, type RoleBudgetSettings } from '@ratchet/agent';
import { type DefinitionExtractorLoader } from '@ratchet/code-intel';
import { assertPlaceholders, callRole, citedLessonIds, codeSection, cutText, fitPrompt, formatDisputes, formatFindings, formatLessons, formatPlan, formatReflections, formatReviewFindings, formatTestReport, goalSection, replySchemaTokens, rolePromptOptions, type CodeFile, type PromptSection, type RolePrompt, type RolePromptOptions } from '@ratchet/prompting';
import type { CallContext } from '@ratchet/bus';
import { TestCaseStatus, type ReflectRequest, type ReflectResponse } from '@ratchet/contracts';
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
 * The prompt is fitted to `settings.promptBudgetTokens` (see
 * `reflectPromptValues`). A reply that stays invalid after its repair round
 * comes back as `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for a request without goal or language;
 *   RESOURCE_EXHAUSTED when the prompt template alone is over the budget.
 */
export function reflectHandler(roleModel: RoleModel, prompt: RolePrompt, settings: RoleBudgetSettings, extractor: DefinitionExtractorLoader) {
  assertPlaceholders('reflector', prompt, placeholders);
  return async (request: ReflectRequest, context: CallContext): Promise<ReflectResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; the reflector needs the goal the attempt failed');
    languageFromProto(request.language);
    const signature = failureSignature(request.testReport, request.error, request.safetyFindings);
    const reply = await callRole({
      role: ChatRole.REFLECTOR,
      roleModel,
      prompt,
      values: reflectPromptValues(request, prompt, await rolePromptOptions(settings, replySchemaTokens(reflectionReplySchema), extractor)),
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

/** Characters of failure text searched for `path:line` references; a longer log is searched at its start and end. */
const maxEvidenceCharacters = 200_000;

/**
 * The reflector's prompt values within `budgetTokens`: the goal, the plan,
 * the test report (the failing tests with their tracebacks), findings, the
 * output, earlier reflections, lessons and disputes, and the code that
 * matters: the request's files (the changed files and the tests) whole
 * while they fit, else the lines the failure names (traceback frames,
 * `path:line`, the findings' lines) inside their functions, the failing
 * tests' definitions, and a repository map of the rest (see `codeContext`).
 * What is cut says so.
 *
 * @throws AppError RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function reflectPromptValues(request: ReflectRequest, prompt: RolePrompt, options: RolePromptOptions): Readonly<Record<string, string>> {
  const { budgetTokens, extractor } = options;
  const failing = (request.testReport?.cases ?? []).filter((testCase) => testCase.status === TestCaseStatus.TEST_CASE_STATUS_FAILED || testCase.status === TestCaseStatus.TEST_CASE_STATUS_ERRORED);
  const errorText = request.error === undefined || request.error.message === '' ? '' : `\nPhase error: ${request.error.code}: ${request.error.message}`;
  const findings = [...request.safetyFindings, ...request.reviewFindings];
  const evidence = [
    ...failing.map((testCase) => `${testCase.failureMessage}\n${testCase.failureDetail}`),
    ...findings.map((finding) => `${finding.path}:${finding.line}: ${finding.message}`),
    request.error?.message ?? '',
    request.stderrExcerpt,
  ].join('\n');
  const files: CodeFile[] = request.files.map((file) => {
    const lines = findings.filter((finding) => finding.path === file.path && finding.line > 0).map((finding) => finding.line);
    return lines.length === 0 ? file : { ...file, focusLines: lines };
  });
  const focus = {
    failingTests: failing.map((testCase) => `${testCase.file || testCase.suite}::${testCase.name}`),
    errorText: evidence.length <= maxEvidenceCharacters ? evidence : `${evidence.slice(0, maxEvidenceCharacters / 2)}\n${evidence.slice(-maxEvidenceCharacters / 2)}`,
    mentionedPaths: request.plan?.files.map((file) => file.path) ?? [],
  };
  const output = outputForPrompt(request);
  const reflections = formatReflections(request.previousReflections);
  const sections: PromptSection[] = [
    goalSection(request.goal, budgetTokens),
    { name: 'plan', text: formatPlan(request.plan) },
    // The code the failure points at gets the largest share, then the failures themselves.
    codeSection('files', { files, goal: request.goal, focus, ...(extractor === undefined ? {} : { extractor }) }, 4),
    { name: 'testReport', text: formatTestReport(request.testReport) + errorText, weight: 3 },
    { name: 'safetyFindings', text: formatFindings(request.safetyFindings) },
    // Blocking review and audit findings count like a failing test.
    { name: 'reviewFindings', text: formatReviewFindings(request.reviewFindings) },
    // The end of a log says how the run ended; the latest reflections matter most.
    { name: 'stderr', text: output, fit: (tokens) => cutText(output, tokens, { label: 'the output', keep: 'end' }) },
    { name: 'previousReflections', text: reflections, fit: (tokens) => cutText(reflections, tokens, { label: 'the earlier reflections', keep: 'end' }) },
    { name: 'lessons', text: formatLessons(request.lessons) },
    { name: 'testDisputes', text: formatDisputes(request.testDisputes) },
  ];
  return fitPrompt(prompt, sections, budgetTokens, { budgetKey: 'reflector.promptBudgetTokens', reservedTokens: options.reservedTokens ?? 0 }).values;
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
