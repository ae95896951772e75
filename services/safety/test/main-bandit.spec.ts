import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { createClient, NatsTransport } from '@ratchet/bus';
import { CheckCodeRequest, SafetyServiceDefinition, SafetyVerdict } from '@ratchet/contracts';
import { startNodeProcess, type NodeProcessFixture } from '@ratchet/testing';
import { startSandbox, type SandboxFixture } from './sandbox';

// The safety process as deployed: its built main.js on NATS, sending CheckCode's Bandit job to the
// sandbox job queue, where a real sandbox-runner process takes it.
jest.setTimeout(120_000);

const packageDir = path.join(__dirname, '..');
const repoRoot = path.resolve(packageDir, '../..');
let fixture: SandboxFixture;
let safety: NodeProcessFixture;
let transport: NatsTransport;

beforeAll(async () => {
  fixture = await startSandbox();
  safety = await startNodeProcess({
    script: path.join(packageDir, 'dist', 'main.js'),
    cwd: repoRoot,
    env: { RATCHET_CONFIG_DIR: path.join(repoRoot, 'config'), RATCHET_BUS_NATS_URL: fixture.natsUrl },
  });
  await safety.waitForLine(/"msg":"ready"/, 30_000);
  transport = await NatsTransport.connect({ url: fixture.natsUrl, name: 'safety-main-test' });
});

afterAll(async () => {
  await transport?.close();
  await safety?.terminate('SIGTERM', 10_000);
  await fixture?.stop();
});

describe('the safety process', () => {
  it('runs Bandit through the sandbox job queue and answers with its findings', async () => {
    const client = createClient(transport, SafetyServiceDefinition, { maxAttempts: 1 });
    const response = await client.checkCode(
      CheckCodeRequest.fromPartial({ taskId: 'task-main', iteration: 1, files: [{ path: 'app.py', content: 'import random\n\nprint(random.random())\n' }] }),
      { timeoutMs: 60_000 },
    );
    expect(response).toEqual({ verdict: SafetyVerdict.SAFETY_VERDICT_WARN, findings: [expect.objectContaining({ ruleId: 'bandit.B311', tool: 'bandit', path: 'app.py', line: 3 })] });
  });
});
