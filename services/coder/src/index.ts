import { coderConfigSection, type CoderSettings } from '@ratchet/agent';
import { type DefinitionExtractor } from '@ratchet/code-intel';
import { type Prompts } from '@ratchet/prompting';
import type { CallContext, Transport } from '@ratchet/bus';
import { CoderMode, type WriteCodeRequest, type WriteCodeResponse } from '@ratchet/contracts';
import type { RoleModel } from '@ratchet/llm';
import { writeCodeHandler } from './handlers/write-code';
import { writeCodeAgentHandler } from './handlers/write-code-agent';
import { AppError, ErrorCode } from '@ratchet/errors';

export { applyReply, codeReplySchema } from './domain/code-reply';
export { agentStopRules, runAgent, stopReason } from './domain/agent-loop';
export type { AgentLimits, AgentPorts, AgentProgress, AgentRun, ToolOutcome } from './domain/agent-loop';
export { applyEdit, parseToolCall, ToolName, toolDefinitions } from './domain/agent-tools';
export { agentPromptValues } from './handlers/write-code-agent';
export { feedbackOf } from './handlers/write-code';

export interface CoderServiceOptions {
  readonly roleModel: RoleModel;
  readonly prompts: Prompts;
  /** The `coder` config section; defaults when absent. */
  readonly settings?: CoderSettings;
  /** The bus, for agent mode (sandbox sessions, the command policy, tool steps); without it only files mode is served. */
  readonly transport?: Transport;
  /** Outlines files for the agent's repository map. */
  readonly extractor?: () => Promise<DefinitionExtractor | undefined>;
}

export interface CoderService {
  readonly implementation: { writeCode(request: WriteCodeRequest, context: CallContext): Promise<WriteCodeResponse> };
  close(): Promise<void>;
}

/**
 * The coder's RPCs, ready for `hostService`.
 *
 * @throws AppError CONFIG_INVALID when the coder prompt uses unknown placeholders.
 */
export function createCoderService(options: CoderServiceOptions): CoderService {
  const settings = options.settings ?? coderConfigSection.parse({});
  const files = writeCodeHandler(options.roleModel, options.prompts.coder);
  const transport = options.transport;
  const agent =
    transport === undefined
      ? undefined
      : writeCodeAgentHandler({ roleModel: options.roleModel, prompt: options.prompts.coderAgent, settings, transport, ...(options.extractor === undefined ? {} : { extractor: options.extractor }) });
  return {
    implementation: {
      writeCode: (request, context) => {
        const mode = request.mode === CoderMode.CODER_MODE_UNSPECIFIED ? (settings.mode === 'agent' ? CoderMode.CODER_MODE_AGENT : CoderMode.CODER_MODE_FILES) : request.mode;
        if (mode !== CoderMode.CODER_MODE_AGENT) return files(request, context);
        if (agent === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, 'this coder was started without the bus, so it cannot work in agent mode; send mode FILES');
        return agent(request, context);
      },
    },
    close: () => Promise.resolve(),
  };
}
