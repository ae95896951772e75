export { OpenAiCompatibleModel } from './adapters/openai-compatible-model';
export type { OpenAiCompatibleModelConfig } from './adapters/openai-compatible-model';
export { ScriptedModel, ScriptOrder } from './adapters/scripted-model';
export type { ScriptedCall, ScriptedModelOptions, ScriptedTurn } from './adapters/scripted-model';
export { ChatRole, ToolProtocol } from './domain/chat-model';
export type {
  AssistantToolCallMessage,
  ChatCallOptions,
  ChatMessage,
  ChatModel,
  ChatRequest,
  ChatResponse,
  ResponseFormat,
  TextMessage,
  TokenUsage,
  ToolCall,
  ToolChoice,
  ToolDefinition,
  ToolResultMessage,
} from './domain/chat-model';
export { describeToolsAsText, formatToolResultAsText, parseTextToolCall } from './domain/text-tool-protocol';
export type { ParseTextToolCallOptions, TextToolCallParse, TextToolProtocolOptions } from './domain/text-tool-protocol';
export { addUsage, costOf } from './domain/cost';
export type { ModelPrice } from './domain/cost';
export { completeStructured, StructuredReplyError } from './structured';
export type { StructuredLookups, StructuredOptions, StructuredResult } from './structured';
export { createRoleModel, createRoleModels, modelConfigSection, scriptedRoleModels, pricesConfigSection, resolveRoleEndpoint } from './models-config';
export type { ModelConfig, RoleEndpoint, RoleModel, RoleModels } from './models-config';
