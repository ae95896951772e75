import { AppError, ErrorCode } from '@ratchet/errors';
import { startFakeOpenAiServer, type FakeOpenAiServer, rejectionOf } from '@ratchet/testing';
import OpenAI from 'openai';
import type { ChatRequest, ToolDefinition } from '../domain/chat-model';
import { OpenAiCompatibleModel, type OpenAiCompatibleModelConfig } from './openai-compatible-model';

const request: ChatRequest = {
  role: 'planner',
  messages: [
    { role: 'system', content: 'You plan.' },
    { role: 'user', content: 'Plan the task.' },
  ],
  maxTokens: 200,
  temperature: 0.2,
};

describe('OpenAiCompatibleModel', () => {
  let server: FakeOpenAiServer;

  beforeEach(async () => {
    server = await startFakeOpenAiServer();
  });

  afterEach(async () => {
    await server.close();
  });

  function model(config: Partial<OpenAiCompatibleModelConfig> = {}): OpenAiCompatibleModel {
    return new OpenAiCompatibleModel({ baseUrl: server.url, apiKey: 'sk-test', model: 'gpt-test', ...config });
  }

  it('sends model, messages and a strict json_schema response_format, and maps the reply and usage', async () => {
    server.enqueue({ kind: 'completion', content: '{"steps":[]}', usage: { promptTokens: 12, completionTokens: 5 }, model: 'gpt-test-2025' });
    const schema = { type: 'object', properties: { steps: { type: 'array' } }, required: ['steps'], additionalProperties: false };

    const response = await model().complete({ ...request, responseFormat: { name: 'plan', schema } });

    expect(response).toEqual({ content: '{"steps":[]}', usage: { promptTokens: 12, completionTokens: 5 }, model: 'gpt-test-2025', finishReason: 'stop', toolCalls: [] });
    expect(server.requests).toHaveLength(1);
    const received = server.requests[0]!;
    expect(received.path).toBe('/v1/chat/completions');
    expect(received.headers['authorization']).toBe('Bearer sk-test');
    expect(received.body).toEqual({
      model: 'gpt-test',
      messages: request.messages,
      max_tokens: 200,
      temperature: 0.2,
      response_format: { type: 'json_schema', json_schema: { name: 'plan', schema, strict: true } },
    });
  });

  it('asks for JSON in the system prompt when the server has no json_schema support', async () => {
    server.enqueue({ kind: 'completion', content: '{}' });
    const response = await model({ supportsJsonSchema: false }).complete({ ...request, responseFormat: { name: 'plan', schema: { type: 'object' } } });

    expect(response.usage).toEqual({ promptTokens: 0, completionTokens: 0 });
    const body = server.requests[0]!.body as { messages: { role: string; content: string }[]; response_format?: unknown };
    expect(body.response_format).toBeUndefined();
    expect(body.messages[0]!.role).toBe('system');
    expect(body.messages[0]!.content).toContain('You plan.');
    expect(body.messages[0]!.content).toContain('{"type":"object"}');
    expect(body.messages[1]).toEqual(request.messages[1]);
  });

  it('sends the key as api-key and api-version as a query parameter for Azure', async () => {
    server.enqueue({ kind: 'completion', content: 'ok' });
    await model({ apiKeyHeader: 'api-key', apiVersion: '2024-10-21' }).complete(request);

    const received = server.requests[0]!;
    expect(received.headers['api-key']).toBe('sk-test');
    expect(received.headers['authorization']).toBeUndefined();
    expect(received.query).toEqual({ 'api-version': '2024-10-21' });
  });

  it('honours retry-after on 429 and then succeeds', async () => {
    server.enqueue({ kind: 'error', status: 429, retryAfter: 1 }, { kind: 'completion', content: 'after the wait' });
    const started = Date.now();

    const response = await model().complete(request);

    expect(response.content).toBe('after the wait');
    expect(server.requests).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('retries 500 twice and then succeeds', async () => {
    server.enqueue({ kind: 'error', status: 500 }, { kind: 'error', status: 503 }, { kind: 'completion', content: 'third time' });

    const response = await model().complete(request);

    expect(response.content).toBe('third time');
    expect(server.requests).toHaveLength(3);
  });

  it('maps 429 after the last retry to a retryable RESOURCE_EXHAUSTED', async () => {
    server.enqueue({ kind: 'error', status: 429, retryAfter: 0 }, { kind: 'error', status: 429, retryAfter: 0 });

    const error = await rejectionOf(model({ maxRetries: 1 }).complete(request));

    expect(error.code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
    expect(error.isRetryable).toBe(true);
    expect(server.requests).toHaveLength(2);
  });

  it('maps persistent 5xx to a retryable UNAVAILABLE', async () => {
    server.enqueue({ kind: 'error', status: 502, retryAfter: 0 });

    const error = await rejectionOf(model({ maxRetries: 0 }).complete(request));

    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.isRetryable).toBe(true);
  });

  it('maps 401 to UNAUTHENTICATED with advice and does not retry', async () => {
    server.enqueue({ kind: 'error', status: 401, message: 'Incorrect API key provided' });

    const error = await rejectionOf(model().complete(request));

    expect(error.code).toBe(ErrorCode.UNAUTHENTICATED);
    expect(error.isRetryable).toBe(false);
    expect(error.message).toContain('set RATCHET_MODEL_API_KEY');
    expect(server.requests).toHaveLength(1);
  });

  it('never repeats a key the provider echoes: not on 401, 403 or any other error', async () => {
    const key = 'sk-echoed-secret-0123456789abcdef';
    for (const status of [401, 403, 400, 500]) {
      server.enqueue({ kind: 'error', status, message: 'Incorrect API key provided', echoApiKey: true, headers: { 'x-should-retry': 'false' } });
      const error = await rejectionOf(model({ apiKey: key, maxRetries: 0 }).complete(request));
      expect(error.message).toContain(`HTTP ${status}`);
      expect(JSON.stringify({ message: error.message, stack: error.stack })).not.toContain(key);
      if (status === 401) expect(error.message).toContain('the API key was rejected');
    }
  });

  it('maps 400 to INVALID_ARGUMENT', async () => {
    server.enqueue({ kind: 'error', status: 400, message: "Invalid schema for response_format 'plan'" });

    const error = await rejectionOf(model().complete(request));

    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.message).toContain("Invalid schema for response_format 'plan'");
  });

  it('maps a slow server to DEADLINE_EXCEEDED', async () => {
    server.enqueue({ kind: 'completion', content: 'too late', delayMs: 2000 });

    const error = await rejectionOf(model({ timeoutMs: 150, maxRetries: 0 }).complete(request));

    expect(error.code).toBe(ErrorCode.DEADLINE_EXCEEDED);
    expect(error.message).toContain('150 ms');
  });

  it('maps a refused connection to a retryable UNAVAILABLE', async () => {
    const url = server.url;
    await server.close();

    const error = await rejectionOf(new OpenAiCompatibleModel({ baseUrl: url, model: 'gpt-test', maxRetries: 0 }).complete(request));

    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.isRetryable).toBe(true);
  });

  it('maps a malformed JSON body to a typed error', async () => {
    server.enqueue({ kind: 'malformed' });

    const error = await rejectionOf(model({ maxRetries: 0 }).complete(request));

    expect(error).toBeInstanceOf(AppError);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toContain('malformed');
  });

  it('maps an aborted call to CANCELLED', async () => {
    server.enqueue({ kind: 'completion', content: 'never read', delayMs: 2000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);

    const error = await rejectionOf(model().complete(request, { signal: controller.signal }));

    expect(error.code).toBe(ErrorCode.CANCELLED);
  });

  describe('tool calling', () => {
    const readFile: ToolDefinition = {
      name: 'read_file',
      description: 'Read lines of a file.',
      parameters: { type: 'object', properties: { path: { type: 'string' }, start_line: { type: 'integer' } }, required: ['path'] },
    };
    const finish: ToolDefinition = { name: 'finish', description: 'Say the work is done.', parameters: { type: 'object', properties: {} } };

    it('sends the tools as functions with tool_choice, and parses tool_calls from the reply', async () => {
      server.enqueue({
        kind: 'tool-call',
        content: 'Reading the file first.',
        toolCalls: [
          { id: 'call_a', name: 'read_file', arguments: '{"path":"a.ts","start_line":1}' },
          { id: 'call_b', name: 'finish', arguments: '{}' },
        ],
        usage: { promptTokens: 3, completionTokens: 4 },
      });

      const response = await model().complete({ ...request, tools: [readFile, finish], toolChoice: 'required' });

      expect(response).toEqual({
        content: 'Reading the file first.',
        usage: { promptTokens: 3, completionTokens: 4 },
        model: 'gpt-test',
        finishReason: 'tool_calls',
        toolCalls: [
          { id: 'call_a', name: 'read_file', arguments: '{"path":"a.ts","start_line":1}' },
          { id: 'call_b', name: 'finish', arguments: '{}' },
        ],
      });
      const body = server.chatBodies()[0]!;
      expect(body.tools).toEqual([
        { type: 'function', function: { name: 'read_file', description: 'Read lines of a file.', parameters: readFile.parameters } },
        { type: 'function', function: { name: 'finish', description: 'Say the work is done.', parameters: finish.parameters } },
      ]);
      expect(body.tool_choice).toBe('required');
    });

    it('sends neither tools nor tool_choice when the request offers no tools', async () => {
      server.enqueue({ kind: 'completion', content: 'ok' });

      await model().complete({ ...request, tools: [], toolChoice: 'auto' });

      const body = server.chatBodies()[0]!;
      expect('tools' in body).toBe(false);
      expect('tool_choice' in body).toBe(false);
    });

    it('round-trips assistant tool calls and tool results in the wire format', async () => {
      server.enqueue({ kind: 'completion', content: 'done' });

      const response = await model().complete({
        role: 'coder',
        tools: [readFile],
        messages: [
          { role: 'system', content: 'You code.' },
          { role: 'user', content: 'Fix the bug.' },
          { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a.ts"}' }] },
          { role: 'tool', toolCallId: 'call_1', name: 'read_file', content: '1: export const a = 1;' },
          { role: 'assistant', content: 'Looking again.', toolCalls: [{ id: 'call_2', name: 'read_file', arguments: '{"path":"b.ts"}' }] },
          { role: 'tool', toolCallId: 'call_2', name: 'read_file', content: 'no such file' },
        ],
      });

      expect(response.toolCalls).toEqual([]);
      expect(response.finishReason).toBe('stop');
      expect(server.chatBodies()[0]!.messages).toEqual([
        { role: 'system', content: 'You code.' },
        { role: 'user', content: 'Fix the bug.' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '1: export const a = 1;' },
        { role: 'assistant', content: 'Looking again.', tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'read_file', arguments: '{"path":"b.ts"}' } }] },
        { role: 'tool', tool_call_id: 'call_2', content: 'no such file' },
      ]);
    });

    it('passes malformed arguments through as-is, so the caller can tell the model', async () => {
      server.enqueue({ kind: 'tool-call', toolCalls: [{ name: 'read_file', arguments: '{"path": "a.ts",' }] });

      const response = await model().complete({ ...request, tools: [readFile] });

      expect(response.toolCalls).toEqual([{ id: 'call_fake_1', name: 'read_file', arguments: '{"path": "a.ts",' }]);
    });

    it('fills in what sloppy servers leave out: finish_reason stop next to calls, missing arguments', async () => {
      server.enqueue({ kind: 'tool-call', toolCalls: [{ name: 'finish' }], finishReason: 'stop' });

      const response = await model().complete({ ...request, tools: [finish] });

      expect(response).toMatchObject({ content: '', finishReason: 'tool_calls', toolCalls: [{ id: 'call_fake_1', name: 'finish', arguments: '{}' }] });
    });

    it('keeps finish_reason length next to tool calls: the arguments may be cut', async () => {
      server.enqueue({ kind: 'tool-call', toolCalls: [{ name: 'read_file', arguments: '{"pa' }], finishReason: 'length' });

      const response = await model().complete({ ...request, tools: [readFile] });

      expect(response.finishReason).toBe('length');
      expect(response.toolCalls[0]!.arguments).toBe('{"pa');
    });

    it('sends tools and a json_schema response format together', async () => {
      server.enqueue({ kind: 'completion', content: '{}' });

      await model().complete({ ...request, tools: [finish], responseFormat: { name: 'plan', schema: { type: 'object' } } });

      const body = server.chatBodies()[0]!;
      expect(body.tools).toHaveLength(1);
      expect(body['response_format']).toEqual({ type: 'json_schema', json_schema: { name: 'plan', schema: { type: 'object' }, strict: true } });
    });
  });
});

describe('startFakeOpenAiServer', () => {
  it('streams SSE chunks the official SDK can read, and answers other paths with 404', async () => {
    const server = await startFakeOpenAiServer();
    try {
      server.enqueue({ kind: 'stream', chunks: ['Hel', 'lo'], usage: { promptTokens: 1, completionTokens: 2 } });
      const client = new OpenAI({ baseURL: server.url, apiKey: 'sk-test', maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('Hello');

      const notFound = await fetch(`${server.url}/models`);
      expect(notFound.status).toBe(404);
      expect(await notFound.json()).toMatchObject({ error: { type: 'not_found' } });
    } finally {
      await server.close();
    }
  });
});
