import { describe, expect, it } from '@jest/globals';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { extendConfigSchema, loadConfig } from '@ratchet/config';
import { ErrorCode } from '@ratchet/errors';
import { OpenAiCompatibleModel } from './adapters/openai-compatible-model';
import { ScriptedModel } from './adapters/scripted-model';
import { createRoleModel, createRoleModels, modelConfigSection, pricesConfigSection, resolveRoleEndpoint } from './models-config';

const schema = extendConfigSchema({ model: modelConfigSection, prices: pricesConfigSection });
const repoConfig = path.resolve(__dirname, '../../../config');

function load(env: Record<string, string>, configDir = repoConfig) {
  return loadConfig({ schema, configDir, files: ['models.yaml'], env });
}

describe('model configuration', () => {
  it('fills every role from the shared RATCHET_MODEL_* variables, with per-role overrides', () => {
    const config = load({ RATCHET_MODEL_BASE_URL: 'http://localhost:11434/v1', RATCHET_MODEL_NAME: 'qwen2.5-coder', RATCHET_MODEL_CODER_NAME: 'big-coder', RATCHET_MODEL_API_KEY: 'k' });
    expect(resolveRoleEndpoint(config.model, 'planner')).toMatchObject({ baseUrl: 'http://localhost:11434/v1', name: 'qwen2.5-coder', apiKey: 'k', timeoutMs: 120_000, apiKeyHeader: 'bearer' });
    expect(resolveRoleEndpoint(config.model, 'coder').name).toBe('big-coder');
  });

  it("caps each role's reply at a size that fits what it returns, unless config says otherwise", () => {
    const env = { RATCHET_MODEL_BASE_URL: 'http://localhost:11434/v1', RATCHET_MODEL_NAME: 'm' };
    const config = load(env);
    expect(['planner', 'coder', 'tester', 'reflector'].map((role) => resolveRoleEndpoint(config.model, role as 'planner').maxTokens)).toEqual([4096, 16384, 8192, 4096]);
    const shared = load({ ...env, RATCHET_MODEL_MAX_TOKENS: '2000', RATCHET_MODEL_CODER_MAX_TOKENS: '30000' });
    expect(resolveRoleEndpoint(shared.model, 'planner').maxTokens).toBe(2000);
    expect(resolveRoleEndpoint(shared.model, 'coder').maxTokens).toBe(30000);
  });

  it('names the variables to set when nothing is configured', () => {
    const config = load({});
    expect(() => resolveRoleEndpoint(config.model, 'planner')).toThrow(expect.objectContaining({ code: ErrorCode.CONFIG_INVALID }));
    expect(() => resolveRoleEndpoint(config.model, 'planner')).toThrow(/RATCHET_MODEL_BASE_URL .*RATCHET_MODEL_NAME .*RATCHET_MODEL_API_KEY.*RATCHET_MODEL_SCRIPT/);
  });

  it('prices a model from the table and builds an OpenAI-compatible model per role', async () => {
    const config = load({ RATCHET_MODEL_BASE_URL: 'https://api.openai.com/v1', RATCHET_MODEL_NAME: 'gpt-4o-mini' });
    const models = await createRoleModels(config.model, config.prices);
    expect(models.reflector.model).toBeInstanceOf(OpenAiCompatibleModel);
    expect(models.planner.price).toEqual({ promptPerMillion: 0.15, completionPerMillion: 0.6 });
    expect(models.coder.modelName).toBe('gpt-4o-mini');
  });

  it('uses one scripted model for every role when model.script is set', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-models-'));
    const script = path.join(dir, 'turns.yaml');
    await writeFile(script, '- role: planner\n  reply: "{}"\n');
    const models = await createRoleModels(load({ RATCHET_MODEL_SCRIPT: script }).model, {});
    expect(models.coder.model).toBeInstanceOf(ScriptedModel);
    expect(models.coder.model).toBe(models.planner.model);
    expect(models.tester.modelName).toBe('scripted:turns.yaml');
  });

  it('reads the tool protocol per role, native by default, from RATCHET_MODEL_[ROLE_]TOOL_PROTOCOL', async () => {
    const env = { RATCHET_MODEL_BASE_URL: 'http://localhost:8080/v1', RATCHET_MODEL_NAME: 'm' };
    const defaults = await createRoleModels(load(env).model, {});
    expect(defaults.coder.toolProtocol).toBe('native');

    const config = load({ ...env, RATCHET_MODEL_CODER_TOOL_PROTOCOL: 'text' });
    expect(resolveRoleEndpoint(config.model, 'coder').toolProtocol).toBe('text');
    expect(resolveRoleEndpoint(config.model, 'planner').toolProtocol).toBe('native');
    expect((await createRoleModel(config.model, {}, 'coder')).toolProtocol).toBe('text');

    const shared = load({ ...env, RATCHET_MODEL_TOOL_PROTOCOL: 'text' });
    expect((await createRoleModels(shared.model, {})).tester.toolProtocol).toBe('text');
    expect(() => load({ ...env, RATCHET_MODEL_TOOL_PROTOCOL: 'xml' })).toThrow(/RATCHET_MODEL_TOOL_PROTOCOL/);
  });

  it('honours the tool protocol for a scripted model, which replays what was recorded', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-models-'));
    const script = path.join(dir, 'turns.yaml');
    await writeFile(script, '- role: coder\n  reply: "```bash\\nls\\n```"\n');
    const models = await createRoleModels(load({ RATCHET_MODEL_SCRIPT: script, RATCHET_MODEL_CODER_TOOL_PROTOCOL: 'text' }).model, {});
    expect(models.coder.toolProtocol).toBe('text');
    expect(models.planner.toolProtocol).toBe('native');
    expect(models.coder.model).toBe(models.planner.model);
  });

  it('rejects a bad URL and an unknown key with the variable that fixes it', () => {
    expect(() => load({ RATCHET_MODEL_BASE_URL: 'not a url' })).toThrow(/RATCHET_MODEL_BASE_URL/);
  });
});
