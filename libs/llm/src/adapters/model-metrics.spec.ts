import { ErrorCode } from '@ratchet/errors';
import { processMetrics } from '@ratchet/telemetry';
import { metricValue } from '@ratchet/telemetry/testing';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '@ratchet/testing';
import type { ChatRequest } from '../domain/chat-model';
import { createRoleModel, modelConfigSection } from '../models-config';
import { OpenAiCompatibleModel } from './openai-compatible-model';
import { ScriptedModel } from './scripted-model';

const request: ChatRequest = { role: 'coder', messages: [{ role: 'user', content: 'Write it.' }] };


describe('model metrics', () => {
  let server: FakeOpenAiServer;
  beforeEach(async () => {
    server = await startFakeOpenAiServer();
  });
  afterEach(() => server.close());

  it('counts tokens, their cost at the model price, HTTP retries and call time by role and configured model', async () => {
    const model = new OpenAiCompatibleModel({ baseUrl: server.url, model: 'priced-model', maxRetries: 2, price: { promptPerMillion: 2, completionPerMillion: 8 } });
    const labels = { role: 'coder', model: 'priced-model' };
    // The first attempt fails with a 503 the SDK retries; the reply names another model, the labels keep the configured one.
    server.enqueue({ kind: 'error', status: 503, message: 'overloaded', retryAfter: 0 }, { kind: 'completion', content: 'done', usage: { promptTokens: 1_000, completionTokens: 250 }, model: 'priced-model-2025-01-01' });

    await model.complete(request);

    expect(server.requests).toHaveLength(2);
    expect(await metricValue('ratchet_model_tokens_total', { ...labels, kind: 'prompt' })).toBe(1_000);
    expect(await metricValue('ratchet_model_tokens_total', { ...labels, kind: 'completion' })).toBe(250);
    expect(await metricValue('ratchet_model_cost_usd_total', labels)).toBeCloseTo((1_000 * 2 + 250 * 8) / 1_000_000, 12);
    expect(await metricValue('ratchet_model_retries_total', labels)).toBe(1);
    expect(await metricValue('ratchet_model_call_duration_seconds_count', labels)).toBe(1);
    expect(await metricValue('ratchet_model_errors_total', { ...labels, code: 'UNAVAILABLE' })).toBe(0);
  });

  it('counts a call that fails after the retries by its error code', async () => {
    const model = new OpenAiCompatibleModel({ baseUrl: server.url, model: 'failing-model', maxRetries: 1 });
    const labels = { role: 'coder', model: 'failing-model' };
    server.enqueue({ kind: 'error', status: 500, retryAfter: 0 }, { kind: 'error', status: 500, retryAfter: 0 });
    await expect(model.complete(request)).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
    server.enqueue({ kind: 'error', status: 400, message: 'bad request' });
    await expect(model.complete(request)).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });

    expect(await metricValue('ratchet_model_errors_total', { ...labels, code: 'UNAVAILABLE' })).toBe(1);
    expect(await metricValue('ratchet_model_errors_total', { ...labels, code: 'INVALID_ARGUMENT' })).toBe(1);
    expect(await metricValue('ratchet_model_retries_total', labels)).toBe(1);
    expect(await metricValue('ratchet_model_call_duration_seconds_count', labels)).toBe(2);
  });

  it('counts a scripted model like any other, its model named after the script', async () => {
    const model = new ScriptedModel([{ role: 'planner', reply: '{}', usage: { promptTokens: 40, completionTokens: 7 } }], { name: 'metrics-test' });
    await model.complete({ role: 'planner', messages: [{ role: 'user', content: 'Plan.' }] });
    await expect(model.complete({ role: 'planner', messages: [{ role: 'user', content: 'Plan.' }] })).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION });
    const labels = { role: 'planner', model: 'scripted:metrics-test' };
    expect(await metricValue('ratchet_model_tokens_total', { ...labels, kind: 'prompt' })).toBe(40);
    expect(await metricValue('ratchet_model_tokens_total', { ...labels, kind: 'completion' })).toBe(7);
    expect(await metricValue('ratchet_model_errors_total', { ...labels, code: 'FAILED_PRECONDITION' })).toBe(1);
  });

  it('creates the series of a configured role at zero, priced from the table', async () => {
    const config = modelConfigSection.parse({ baseUrl: server.url, name: 'declared-model' });
    const roleModel = await createRoleModel(config, { 'declared-model': { promptPerMillion: 1, completionPerMillion: 1 } }, 'reflector');
    const labels = { role: 'reflector', model: 'declared-model' };
    const text = await processMetrics().registry.metrics();
    expect(text).toContain('ratchet_model_tokens_total{role="reflector",model="declared-model",kind="prompt"} 0');
    expect(text).toContain('ratchet_model_cost_usd_total{role="reflector",model="declared-model"} 0');
    expect(text).toContain('ratchet_model_retries_total{role="reflector",model="declared-model"} 0');

    server.enqueue({ kind: 'completion', content: 'ok', usage: { promptTokens: 500_000, completionTokens: 500_000 } });
    await roleModel.model.complete({ role: 'reflector', messages: [{ role: 'user', content: 'Why?' }] });
    expect(await metricValue('ratchet_model_cost_usd_total', labels)).toBeCloseTo(1, 9);
  });
});
