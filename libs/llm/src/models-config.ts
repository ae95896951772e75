import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import { OpenAiCompatibleModel } from './adapters/openai-compatible-model';
import { declareModelSeries } from './adapters/model-metrics';
import { ScriptedModel } from './adapters/scripted-model';
import { ChatRole, ToolProtocol, type ChatModel } from './domain/chat-model';
import type { ModelPrice } from './domain/cost';

// Every key optional here: a role's endpoint is the role's own value, else the
// shared default. Defaults are applied by `resolveRoleEndpoint`, so "unset"
// stays distinguishable from "set to the default" for the role overrides.
const endpointShape = {
  /** Base URL up to and including `/v1`. */
  baseUrl: z.string().url().optional(),
  apiKey: z.string().min(1).optional(),
  /** Model name (the Azure deployment name on Azure). */
  name: z.string().min(1).optional(),
  /** Per-attempt timeout, ms. */
  timeoutMs: z.number().int().positive().optional(),
  /** Retries after the first attempt on 408/409/429/5xx and connection errors. */
  maxRetries: z.number().int().min(0).max(10).optional(),
  /** false for servers that ignore `response_format: json_schema`; the schema then goes into the prompt. */
  supportsJsonSchema: z.boolean().optional(),
  /**
   * How the agent asks this model to call tools: `native` (the API's
   * `tools`/`tool_calls`) or `text` (one fenced block per reply, for servers
   * without tool calling). Default native.
   */
  toolProtocol: z.enum([ToolProtocol.NATIVE, ToolProtocol.TEXT]).optional(),
  /** `api-key` for Azure OpenAI keys; `bearer` everywhere else. */
  apiKeyHeader: z.enum(['bearer', 'api-key']).optional(),
  /** Azure's `api-version` query parameter. */
  apiVersion: z.string().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
  /** Upper bound on completion tokens per call. */
  maxTokens: z.number().int().positive().optional(),
};

const roleSection = z.object(endpointShape).strict().prefault({});

/** The `model` section of config/models.yaml (env `RATCHET_MODEL_*`). */
export const modelConfigSection = z
  .object({
    ...endpointShape,
    /**
     * A scripted-model file (YAML/JSON turns) that answers every role instead
     * of an endpoint: for demos and tests. Relative to the working directory.
     */
    script: z.string().min(1).optional(),
    planner: roleSection,
    coder: roleSection,
    tester: roleSection,
    reflector: roleSection,
    reprompter: roleSection,
    reviewer: roleSection,
    auditor: roleSection,
  })
  .strict()
  .prefault({});

const priceSchema = z.object({ promptPerMillion: z.number().nonnegative(), completionPerMillion: z.number().nonnegative() }).strict();

/** The `prices` section: USD per million tokens, by model name. */
export const pricesConfigSection = z.record(z.string(), priceSchema).prefault({});

export type ModelConfig = z.infer<typeof modelConfigSection>;

/** One role's endpoint with defaults applied. */
export interface RoleEndpoint {
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly name: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly supportsJsonSchema: boolean;
  readonly toolProtocol: ToolProtocol;
  readonly apiKeyHeader: 'bearer' | 'api-key';
  readonly apiVersion?: string;
  readonly temperature: number;
  readonly maxTokens: number;
}

const roles = Object.values(ChatRole);

type DeepReadonlyModelConfig = { readonly [K in keyof ModelConfig]: ModelConfig[K] extends object ? Readonly<ModelConfig[K]> : ModelConfig[K] };

/**
 * Reply caps sized for each role, in completion tokens: the coder returns
 * whole files as JSON, the tester whole test files; the planner and the
 * reflector answer in a few paragraphs. A maxTokens set for the role, or
 * for all roles, wins.
 */
export const defaultMaxTokens: Readonly<Record<ChatRole, number>> = { planner: 4096, coder: 16384, tester: 8192, reflector: 4096, reprompter: 4096, reviewer: 4096, auditor: 4096 };

/**
 * The endpoint `role` uses: its own keys over the shared ones, then defaults
 * (timeout 60000 ms, 3 retries, JSON schema on, native tool calls, bearer
 * key, temperature 0.2, completion tokens per `defaultMaxTokens`).
 *
 * @throws AppError CONFIG_INVALID naming the variables to set when the base
 *   URL or model name is missing for the role.
 */
export function resolveRoleEndpoint(config: DeepReadonlyModelConfig, role: ChatRole): RoleEndpoint {
  const own = config[role];
  const pick = <K extends keyof typeof endpointShape>(key: K) => own[key] ?? config[key];
  const baseUrl = pick('baseUrl');
  const name = pick('name');
  const missing: string[] = [];
  const roleUpper = role.toUpperCase();
  if (baseUrl === undefined) missing.push(`RATCHET_MODEL_BASE_URL (or RATCHET_MODEL_${roleUpper}_BASE_URL, model.baseUrl in config/models.yaml)`);
  if (name === undefined) missing.push(`RATCHET_MODEL_NAME (or RATCHET_MODEL_${roleUpper}_NAME, model.name in config/models.yaml)`);
  if (baseUrl === undefined || name === undefined) {
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      `no model is configured for the ${role}: set ${missing.join(' and ')}; add RATCHET_MODEL_API_KEY when the server needs a key. ` +
        'Examples: OpenAI https://api.openai.com/v1 with gpt-4o-mini; Ollama http://localhost:11434/v1 with qwen2.5-coder; vLLM http://HOST:8000/v1 with the served model name. ' +
        'Or set RATCHET_MODEL_SCRIPT to a scripted-model file to replay recorded turns.',
    );
  }
  const endpoint: RoleEndpoint = {
    baseUrl,
    name,
    timeoutMs: pick('timeoutMs') ?? 60_000,
    maxRetries: pick('maxRetries') ?? 3,
    supportsJsonSchema: pick('supportsJsonSchema') ?? true,
    toolProtocol: pick('toolProtocol') ?? ToolProtocol.NATIVE,
    apiKeyHeader: pick('apiKeyHeader') ?? 'bearer',
    temperature: pick('temperature') ?? 0.2,
    maxTokens: pick('maxTokens') ?? defaultMaxTokens[role],
  };
  const apiKey = pick('apiKey');
  const apiVersion = pick('apiVersion');
  return { ...endpoint, ...(apiKey === undefined ? {} : { apiKey }), ...(apiVersion === undefined ? {} : { apiVersion }) };
}

/** What a role service needs to call its model. */
export interface RoleModel {
  readonly model: ChatModel;
  /** Shown in output and stored with usage: the endpoint's model name, or `scripted:<file>`. */
  readonly modelName: string;
  readonly temperature: number;
  readonly maxTokens: number;
  /** Absent when the price table has no entry for the model (cost then counts as 0). */
  readonly price?: ModelPrice;
  /**
   * How to offer this model tools (`model.toolProtocol`, per role
   * `model.<role>.toolProtocol`). Absent means `native`; optional so role
   * models built by hand (demos, tests) need not name it.
   */
  readonly toolProtocol?: ToolProtocol;
}

export type RoleModels = Readonly<Record<ChatRole, RoleModel>>;

/** One scripted model answering every role (demos, tests, benchmarks), at temperature 0 and 4096 completion tokens. */
export function scriptedRoleModels(model: ScriptedModel, toolProtocol?: (role: ChatRole) => RoleModel['toolProtocol']): RoleModels {
  const entry = (role: ChatRole): RoleModel => ({ model, modelName: `scripted:${model.name}`, temperature: 0, maxTokens: 4096, ...(toolProtocol === undefined ? {} : { toolProtocol: toolProtocol(role) }) });
  return Object.fromEntries(roles.map((role) => [role, entry(role)])) as Record<ChatRole, RoleModel>;
}

/**
 * A model per role from the `model` and `prices` config sections. With
 * `model.script` set, one ScriptedModel answers every role, in script order.
 *
 * @throws AppError CONFIG_INVALID when a role has no endpoint (see
 *   `resolveRoleEndpoint`) or the script is invalid; NOT_FOUND when the script
 *   file cannot be read.
 */
export async function createRoleModels(config: DeepReadonlyModelConfig, prices: Readonly<Record<string, ModelPrice>>): Promise<RoleModels> {
  if (config.script !== undefined) {
    const scripted = await ScriptedModel.fromFile(path.resolve(config.script));
    for (const role of roles) declareModelSeries(role, `scripted:${scripted.name}`);
    return scriptedRoleModels(scripted, (role) => scriptedToolProtocol(config, role));
  }
  const result: Partial<Record<ChatRole, RoleModel>> = {};
  // Resolve all roles first so one error lists the problem once, not per role.
  const endpoints = roles.map((role) => [role, resolveRoleEndpoint(config, role)] as const);
  for (const [role, endpoint] of endpoints) {
    result[role] = endpointModel(endpoint, prices);
    declareModelSeries(role, endpoint.name);
  }
  return result as RoleModels;
}

/**
 * The model of one role, for a role service running as its own process.
 * With `model.script` set, a ScriptedModel that keeps only this role's turns
 * of the shared script.
 *
 * @throws AppError CONFIG_INVALID when the role has no endpoint or the
 *   script is invalid; NOT_FOUND when the script file cannot be read.
 */
export async function createRoleModel(config: DeepReadonlyModelConfig, prices: Readonly<Record<string, ModelPrice>>, role: ChatRole): Promise<RoleModel> {
  if (config.script !== undefined) {
    const scripted = await ScriptedModel.fromFile(path.resolve(config.script), { roles: [role] });
    declareModelSeries(role, `scripted:${scripted.name}`);
    return { model: scripted, modelName: `scripted:${scripted.name}`, temperature: 0, maxTokens: 4096, toolProtocol: scriptedToolProtocol(config, role) };
  }
  const endpoint = resolveRoleEndpoint(config, role);
  declareModelSeries(role, endpoint.name);
  return endpointModel(endpoint, prices);
}

function endpointModel(endpoint: RoleEndpoint, prices: Readonly<Record<string, ModelPrice>>): RoleModel {
  const price = prices[endpoint.name];
  const model = new OpenAiCompatibleModel({
    baseUrl: endpoint.baseUrl,
    model: endpoint.name,
    timeoutMs: endpoint.timeoutMs,
    maxRetries: endpoint.maxRetries,
    supportsJsonSchema: endpoint.supportsJsonSchema,
    apiKeyHeader: endpoint.apiKeyHeader,
    ...(endpoint.apiKey === undefined ? {} : { apiKey: endpoint.apiKey }),
    ...(endpoint.apiVersion === undefined ? {} : { apiVersion: endpoint.apiVersion }),
    ...(price === undefined ? {} : { price }),
  });
  return {
    model,
    modelName: endpoint.name,
    temperature: endpoint.temperature,
    maxTokens: endpoint.maxTokens,
    toolProtocol: endpoint.toolProtocol,
    ...(price === undefined ? {} : { price }),
  };
}

// A script replays whichever protocol it was recorded with, so the setting is
// honoured for it too (a text-protocol recording needs `text`).
function scriptedToolProtocol(config: DeepReadonlyModelConfig, role: ChatRole): ToolProtocol {
  return config[role].toolProtocol ?? config.toolProtocol ?? ToolProtocol.NATIVE;
}
