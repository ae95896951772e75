import { randomUUID } from 'node:crypto';
import { countTokens, languageFromProto, mergeFiles, testCommandLine, type CoderSettings } from '@ratchet/agent';
import { buildRepoMap, type DefinitionExtractor } from '@ratchet/code-intel';
import { assertPlaceholders, fitConversation, renderTemplate, type RolePrompt } from '@ratchet/prompting';
import { createClient, type CallContext, type CallOptions, type ServiceClient, type Transport } from '@ratchet/bus';
import { Phase, SafetyServiceDefinition, SandboxRunnerServiceDefinition, ToolCalled, type CommandDecision, type ToolStep, type WriteCodeRequest, type WriteCodeResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, costOf, describeToolsAsText, ToolProtocol, type ChatMessage, type RoleModel } from '@ratchet/llm';
import { SessionTools } from '../adapters/session-tools';
import { runAgent } from '../domain/agent-loop';
import { toolDefinitions } from '../domain/agent-tools';
import { feedbackOf, taskPromptValues } from './write-code';

/** Tool results a coder turn sees whole: the ones it is acting on (SWE-agent keeps the last five). */
const keptToolResults = 8;

const placeholders = ['goal', 'spec', 'profile', 'language', 'languageGuide', 'plan', 'repoMap', 'tests', 'testCommand', 'repository', 'feedback', 'reviewFindings', 'lessons'] as const;

export interface AgentCoderOptions {
  readonly roleModel: RoleModel;
  readonly prompt: RolePrompt;
  readonly settings: CoderSettings;
  /** The bus: sandbox sessions (pinned to their runner), the command policy, and tool steps to the orchestrator. */
  readonly transport: Transport;
  /** Outlines files for the repository map; without one the map lists paths only. */
  readonly extractor?: () => Promise<DefinitionExtractor | undefined>;
}

/** What the model is told runs the tests when the task names no command (the tester adds its report flags). */
const defaultTestCommand = { python: 'python3 -m pytest -q', typescript: 'node --test', javascript: 'node --test' } as const;
/** Test files named in the shown command at most; past them it names the runner only. */
const maxNamedTestFiles = 12;

/**
 * The command the tester runs when the task names none: the runner on the
 * task's tests, named when they are few (a bare `node --test` in a real
 * project also runs its demos and scripts, which the tester never does).
 */
function conventionTestCommand(language: keyof typeof defaultTestCommand, testPaths: readonly string[]): string {
  const runner = defaultTestCommand[language];
  if (testPaths.length === 0) return runner;
  if (testPaths.length > maxNamedTestFiles) return `${runner} on the ${testPaths.length} acceptance test files`;
  return `${runner} ${[...testPaths].sort().join(' ')}`;
}

/**
 * The agent prompt's placeholder values: the goal with its spec and profile,
 * the plan, the repository map (`repoMap`, '' when empty), the protected
 * tests, the test command, the feedback with people's command decisions,
 * the blocking review and audit findings, and the lessons.
 *
 * @throws AppError INVALID_ARGUMENT for an unspecified language.
 */
export function agentPromptValues(request: WriteCodeRequest, repoMap: string, protectedPaths: ReadonlySet<string>, gitRepository = false): Record<(typeof placeholders)[number], string> {
  const language = languageFromProto(request.language);
  return {
    ...taskPromptValues(request, language),
    repoMap: repoMap === '' ? '(use list_files)' : repoMap,
    tests: protectedPaths.size === 0 ? '(none given)' : [...protectedPaths].sort().join(', '),
    testCommand: request.testCommand.length === 0 ? conventionTestCommand(language, request.acceptanceTests.map((file) => file.path)) : testCommandLine(request.testCommand),
    // Said only when the session made it so: an image without git leaves a plain directory.
    repository: gitRepository
      ? `The work directory is a git repository committed as this attempt started${request.iteration > 1 ? " (earlier attempts' changes included)" : ''}: \`git diff\` shows your change so far, \`git stash\` sets it aside to run the tests on the original and \`git stash pop\` brings it back.`
      : '',
    feedback: [feedbackOf(request), ...request.commandDecisions.map(decisionText)].join('\n'),
  };
}

/** How long the orchestrator has to store a step, ms. */
const progressTimeoutMs = 10_000;

/**
 * WriteCode in agent mode: opens a sandbox session with the current files,
 * runs the tool loop over it (every command checked by safety's command
 * policy, every step sent to the orchestrator as it happens), and returns
 * the session's change: the whole new file set, the changed and deleted
 * paths, the steps and the usage. The session is closed however the phase ends.
 *
 * @throws AppError INVALID_ARGUMENT for a request without goal or plan;
 *   UNAVAILABLE (retryable) when the session's runner or sandbox is lost
 *   (the phase runs again with a fresh session); CANCELLED when aborted.
 */
export function writeCodeAgentHandler(options: AgentCoderOptions) {
  assertPlaceholders('coderAgent', options.prompt, placeholders);
  const { transport, settings, roleModel } = options;
  const sandbox = createClient(transport, SandboxRunnerServiceDefinition, { maxAttempts: 2, defaultTimeoutMs: 60_000 });
  const safety: ServiceClient<typeof SafetyServiceDefinition> = createClient(transport, SafetyServiceDefinition, { defaultTimeoutMs: 10_000 });
  const protocol = roleModel.toolProtocol ?? ToolProtocol.NATIVE;
  // Native tool definitions travel with every call, beside the messages: the messages get the rest of the budget.
  const messageBudget = settings.promptBudgetTokens - (protocol === ToolProtocol.NATIVE ? countTokens(JSON.stringify(toolDefinitions)) : 0);

  return async (request: WriteCodeRequest, context: CallContext): Promise<WriteCodeResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do');
    if (request.plan === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'plan is missing; the coder implements a plan from the planner');
    // An unspecified language is refused before a sandbox is opened.
    languageFromProto(request.language);
    const started = Date.now();
    const phaseDeadline = Math.min(context.deadline, started + settings.phaseTimeoutSeconds * 1000);
    const call = (): CallOptions => ({ deadline: context.deadline, signal: context.signal });
    const protectedPaths = new Set([...request.protectedPaths, ...request.acceptanceTests.map((file) => file.path)]);
    // Acceptance tests the workspace does not hold yet go into the session too, so the model can run them.
    const files = mergeFiles(request.acceptanceTests, request.files);

    const sessionId = `coder-${request.taskId.slice(0, 40)}-${request.iteration}-${randomUUID().slice(0, 8)}`.replace(/[^A-Za-z0-9_-]/g, '-');
    const opened = await sandbox.openSession(
      { sessionId, taskId: request.taskId, iteration: request.iteration, language: request.language, files, env: {}, limits: undefined, driver: 0, image: '', idleTimeout: undefined, dataFiles: request.dataFiles, setupCommand: request.setupCommand },
      call(),
    );
    const pinned = createClient(transport, SandboxRunnerServiceDefinition, { instance: opened.runnerId, maxAttempts: 1, defaultTimeoutMs: 60_000 });
    try {
      const tools = new SessionTools({
        sandbox: pinned,
        safety,
        sessionId,
        taskId: request.taskId,
        language: request.language,
        protectedPaths,
        approveAsked: request.approveAskedCommands,
        commandGates: request.commandGates,
        decisions: request.commandDecisions,
        commandTimeoutMs: settings.commandTimeoutSeconds * 1000,
        call,
      });
      const extractor = await options.extractor?.().catch(() => undefined);
      const failing = (request.previousTestReport?.cases ?? []).filter((testCase) => testCase.status === 2 || testCase.status === 3).map((testCase) => `${testCase.file || testCase.suite}::${testCase.name}`);
      const repoMap = buildRepoMap({
        files,
        goal: `${request.goal}\n${request.plan.summary}`,
        focus: { failingTests: failing, mentionedPaths: request.plan.files.map((file) => file.path), errorText: request.reflection?.rootCause ?? '' },
        budgetTokens: Math.min(settings.repoMapTokens, Math.floor(settings.promptBudgetTokens / 3)),
        ...(extractor === undefined ? {} : { extractor }),
      });
      const values = agentPromptValues(request, repoMap.text, protectedPaths, opened.gitRepository);
      const system = renderTemplate(options.prompt.system, values) + (protocol === ToolProtocol.TEXT ? `\n\n${describeToolsAsText(toolDefinitions)}` : '');
      const initial: ChatMessage[] = [
        { role: 'system', content: system },
        { role: 'user', content: renderTemplate(options.prompt.user, values) },
      ];
      const run = await runAgent(
        initial,
        protocol,
        {
          complete: async (messages, offered) => {
            const response = await roleModel.model.complete(
              {
                role: ChatRole.CODER,
                messages,
                maxTokens: request.maxTokens > 0 ? Math.min(request.maxTokens, roleModel.maxTokens) : roleModel.maxTokens,
                temperature: roleModel.temperature,
                ...(offered === undefined ? {} : { tools: offered }),
              },
              { signal: context.signal },
            );
            const usage = { ...response.usage, costUsd: roleModel.price === undefined ? 0 : costOf(response.usage, roleModel.price), modelCalls: 1 };
            return { response, usage };
          },
          execute: (valid) => tools.execute(valid),
          record: (step) => sendStep(transport, request.progressSubject, step),
          // The last few tool results stay whole; older ones (and the file contents the calls before them wrote) are summarised
          // even under the budget: each call would pay for them again, while the workspace holds what they did.
          fit: (messages) =>
            fitConversation(messages, messageBudget, { keepLast: 2, keepObservations: keptToolResults, isObservation: (message) => message.role === 'user' && message.content.startsWith('<tool_result') }).messages,
          now: Date.now,
        },
        { maxSteps: settings.maxSteps, maxModelCalls: request.maxModelCalls, maxTokens: request.maxTokens > 0 ? Number(request.maxTokens) : 0, wallTimeMs: Math.max(0, phaseDeadline - started) },
        context.signal,
      );
      const diff = await pinned.sessionDiff({ sessionId }, { signal: context.signal, deadline: Math.min(context.deadline, Date.now() + 60_000) }).catch((error: unknown) => {
        const appError = AppError.from(error);
        if (appError.code === ErrorCode.CANCELLED) throw appError;
        throw new AppError(ErrorCode.UNAVAILABLE, `the coder's sandbox session was lost before its change was read (${appError.message}); the coding phase runs again with a fresh session`, { retryable: true, cause: error });
      });
      // The acceptance tests stay as given, whatever a command did to them.
      const changed = diff.changedFiles.filter((file) => !protectedPaths.has(file.path));
      const deleted = new Set(diff.deletedPaths.filter((path) => !protectedPaths.has(path)));
      const result = mergeFiles(
        request.files.filter((file) => !deleted.has(file.path)),
        changed.filter((file) => !request.acceptanceTests.some((test) => test.path === file.path)),
      );
      const skipped = diff.skipped.map((entry) => `${entry.path} (${entry.reason})`);
      return {
        files: result,
        deletedPaths: [...deleted],
        summary: run.summary + (skipped.length === 0 ? '' : ` Not carried: ${skipped.join(', ')}.`),
        dependencies: [],
        usage: run.usage,
        replyFailure: undefined,
        disputedTests: [],
        toolSteps: [...run.steps],
        changedPaths: changed.map((file) => file.path),
        pendingCommand: run.paused,
      };
    } finally {
      await pinned.closeSession({ sessionId }, { timeoutMs: 10_000 }).catch(() => undefined);
    }
  };
}

/** A person's decision about a command, as the model reads it when the phase goes on. */
function decisionText(decision: CommandDecision): string {
  return decision.approved
    ? `A person approved running \`${decision.commandLine}\`${decision.comment === '' ? '' : ` (${decision.comment})`}; run it now if you still need it. Your changes so far are in the files.`
    : `A person refused \`${decision.commandLine}\`${decision.comment === '' ? '' : `: ${decision.comment}`}; do without it. Your changes so far are in the files.`;
}

/** Sends a step to the orchestrator and waits until it is stored; a lost orchestrator ends the phase. */
async function sendStep(transport: Transport, subject: string, step: ToolStep): Promise<void> {
  if (subject === '') return;
  try {
    await transport.request(subject, ToolCalled.encode({ step, phase: Phase.PHASE_CODING }).finish(), { timeoutMs: progressTimeoutMs });
  } catch (error) {
    throw new AppError(ErrorCode.UNAVAILABLE, `the orchestrator did not take tool step ${step.number} (${AppError.from(error).message}); the coding phase stops`, { retryable: true, cause: error });
  }
}
