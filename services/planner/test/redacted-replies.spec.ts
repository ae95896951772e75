import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createClient, NatsTransport } from '@ratchet/bus';
import { Language, PlannerServiceDefinition } from '@ratchet/contracts';
import { AppError } from '@ratchet/errors';
import { startFakeOpenAiServer, startNatsServer, startNodeProcess, type FakeOpenAiServer, type NatsServerFixture, type NodeProcessFixture } from '@ratchet/testing';

// The planner alone knows the model's key (compose and k8s give it to the
// model roles only), so a provider that echoes it must be caught before the
// reply leaves the planner: the orchestrator and memory, which store plans,
// events and lessons, could not recognise it. The built process, a real
// nats-server, the real adapter against the local fake OpenAI server.
jest.setTimeout(60_000);

const repoRoot = path.resolve(__dirname, '../../..');
// Hex after a word: no rule knows this shape and it is not random enough for the entropy check; only its value gives it away.
const key = `corpkey-${randomBytes(12).toString('hex')}`;

describe('planner process: replies and errors leave without the model key', () => {
  let nats: NatsServerFixture;
  let model: FakeOpenAiServer;
  let planner: NodeProcessFixture;
  let transport: NatsTransport;

  beforeAll(async () => {
    [nats, model] = await Promise.all([startNatsServer(), startFakeOpenAiServer()]);
    planner = await startNodeProcess({
      script: path.join(__dirname, '..', 'dist', 'main.js'),
      cwd: repoRoot,
      env: { RATCHET_CONFIG_DIR: path.join(repoRoot, 'config'), RATCHET_BUS_NATS_URL: nats.url, RATCHET_MODEL_BASE_URL: model.url, RATCHET_MODEL_NAME: 'fake-model', RATCHET_MODEL_API_KEY: key, RATCHET_MODEL_MAX_RETRIES: '0' },
    });
    await planner.waitForLine(/"msg":"ready"/, 40_000);
    transport = await NatsTransport.connect({ url: nats.url, name: 'orchestrator-in-test' });
  });
  afterAll(async () => {
    await transport?.close();
    await planner?.terminate('SIGTERM', 10_000);
    await Promise.all([model?.close(), nats?.stop()]);
  });

  const request = {
    taskId: 'task-1',
    iteration: 1,
    goal: 'a CLI that manages TODO items in JSON',
    language: Language.LANGUAGE_PYTHON,
    workspace: [],
    acceptanceTests: [],
    lessons: [],
    previousPlan: undefined,
    reflection: undefined,
    replanReason: '',
    previousFailure: '',
    maxTokens: 0,
    judgeTestEdits: false,
  };

  it('redacts the key a model repeats in its plan', async () => {
    const plan = {
      summary: `Call the API with the key ${key} from the environment.`,
      steps: [{ description: `export OPENAI_KEY=${key}`, paths: ['app.py'] }],
      files: [{ path: 'app.py', purpose: 'the code', isTest: false }],
      testStrategy: 'pytest',
      dependencies: [],
      appliedLessonIds: [],
    };
    model.enqueue({ kind: 'completion', content: JSON.stringify(plan) });
    const response = await createClient(transport, PlannerServiceDefinition).createPlan(request, { timeoutMs: 30_000 });
    expect(response.plan?.summary).toBe('Call the API with the key [REDACTED:configured-secret] from the environment.');
    expect(JSON.stringify(response)).not.toContain(key);
  });

  it('redacts the key in the error of a provider that echoes it', async () => {
    model.enqueue({ kind: 'error', status: 400, message: `Bad request for key ${key}` });
    const error = await createClient(transport, PlannerServiceDefinition)
      .createPlan(request, { timeoutMs: 30_000 })
      .then(
        () => undefined,
        (caught: unknown) => AppError.from(caught),
      );
    expect(error).toBeDefined();
    expect(error?.message).not.toContain(key);
  });
});
