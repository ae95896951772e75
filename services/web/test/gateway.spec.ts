import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { hashToken } from '@ratchet/grpc-api';
import { freePort, scriptedGoals, startNodeProcess, startStack, writeScript, type NodeProcessFixture, type Stack } from '@ratchet/testing';
import { parseServerSentEvents, type ServerSentEvent } from '../app/src/sse';
import { signInMessage, tokenRefusedMessage } from '../src/domain/http-errors';

// The dashboard's gateway as teams run it: its own process (dist/main.js)
// in front of a distributed Ratchet (real nats-server, Postgres, every
// service a process, the orchestrator's gRPC API with a users file). The
// browser's token goes through to the orchestrator, which decides who may
// do what, exactly as for the CLI. Only the model is scripted.
jest.setTimeout(240_000);

const repoRoot = path.resolve(__dirname, '../../..');
const tokens = { ana: 'web-test-ana-token', vic: 'web-test-vic-token', olga: 'web-test-olga-token' } as const;
const [approved] = scriptedGoals('web', 1);
const traceTemplate = 'http://grafana.test/d/ratchet-tasks/ratchet-tasks?var-task_id={taskId}&var-trace_id={traceId}';

let dir: string;
let stack: Stack;
let web: NodeProcessFixture;
let base: string;

/** A request to the gateway, as `who` (or without a token); the answer's status, headers and JSON body. */
async function call(method: 'GET' | 'POST', route: string, options: { who?: keyof typeof tokens; body?: string | object; headers?: Record<string, string> } = {}) {
  const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const response = await fetch(`${base}${route}`, {
    method,
    headers: {
      ...(options.who === undefined ? {} : { authorization: `Bearer ${tokens[options.who]}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, headers: response.headers, json: json as { error?: { code: string; message: string } } & Record<string, unknown> };
}

/**
 * A request with the headers a browser sets itself (Host, Origin,
 * Sec-Fetch-Site), which fetch will not send as given: over node:http to
 * the gateway's real port. The answer's status and JSON body (or text).
 */
function rawCall(method: 'GET' | 'POST', route: string, headers: Record<string, string>, body?: object): Promise<{ status: number; json: { error?: { code: string; message: string } } & Record<string, unknown>; text: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${base}${route}`, { method, headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown = {};
        try {
          json = JSON.parse(text);
        } catch {
          // An HTML page: the text is the answer.
        }
        resolve({ status: response.statusCode ?? 0, json: json as { error?: { code: string; message: string } } & Record<string, unknown>, text });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

/** The task's Server-Sent Events as they come, until the stream ends or `until` says stop. */
async function readEvents(taskId: string, who: keyof typeof tokens, until: (event: ServerSentEvent) => boolean, from = 0): Promise<ServerSentEvent[]> {
  const controller = new AbortController();
  const response = await fetch(`${base}/api/tasks/${taskId}/events?from=${from}`, { headers: { authorization: `Bearer ${tokens[who]}` }, signal: controller.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const seen: ServerSentEvent[] = [];
  let buffer = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      const parsed = parseServerSentEvents(buffer + decoder.decode(chunk, { stream: true }));
      buffer = parsed.rest;
      for (const event of parsed.events) {
        seen.push(event);
        if (until(event)) return seen;
      }
    }
    return seen;
  } finally {
    controller.abort();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ratchet-web-test-'));
  const users = path.join(dir, 'users.yaml');
  await writeFile(
    users,
    [
      'users:',
      `  - { name: ana, team: default, roles: [submitter, approver], tokenSha256: "${hashToken(tokens.ana)}" }`,
      `  - { name: vic, team: default, roles: [viewer], tokenSha256: "${hashToken(tokens.vic)}" }`,
      `  - { name: olga, team: other, roles: [submitter, approver], tokenSha256: "${hashToken(tokens.olga)}" }`,
      '',
    ].join('\n'),
  );
  const script = path.join(dir, 'model-script.json');
  await writeScript(script, [approved!]);
  stack = await startStack({ repoRoot, env: { RATCHET_MODEL_SCRIPT: script }, serviceEnv: { orchestrator: { RATCHET_GRPC_USERS_FILE: users, RATCHET_GRPC_TOKENS: '' } } });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  web = await startNodeProcess({
    script: path.join(repoRoot, 'services/web/dist/main.js'),
    nodeArgs: ['--require', '@ratchet/telemetry/register'],
    cwd: repoRoot,
    env: {
      RATCHET_CONFIG_DIR: path.join(repoRoot, 'config'),
      RATCHET_WEB_ADDRESS: `127.0.0.1:${port}`,
      RATCHET_WEB_ORCHESTRATOR_ADDRESS: stack.grpcAddress,
      RATCHET_WEB_TRACE_URL_TEMPLATE: traceTemplate,
      RATCHET_WEB_ALLOWED_HOSTS: 'dashboard.test, proxy.test:8443',
    },
  });
  await web.waitForLine(/"msg":"ready"/, 30_000);
}, 180_000);

afterAll(async () => {
  await web?.terminate('SIGTERM', 10_000);
  await stack?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('the web gateway in front of an orchestrator over gRPC', () => {
  it('serves the app, its deep links and its assets, with security headers', async () => {
    for (const route of ['/', '/tasks/some-id', '/lessons']) {
      const page = await fetch(`${base}${route}`);
      expect([route, page.status]).toEqual([route, 200]);
      expect(await page.text()).toContain('<div id="root"></div>');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    }
    const html = await (await fetch(base)).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${base}${script!}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
  });

  it('asks for a token when there is none and says a wrong one was refused, as 401 with a message', async () => {
    const missing = await call('GET', '/api/tasks');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="ratchet"');
    expect(missing.json).toEqual({ error: { code: 'UNAUTHENTICATED', message: signInMessage() } });
    const wrong = await call('GET', '/api/tasks', { headers: { authorization: 'Bearer not-a-token' } });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error).toEqual({ code: 'UNAUTHENTICATED', message: tokenRefusedMessage() });
    // The event stream too: a plain JSON error, no stream.
    const stream = await call('GET', '/api/tasks/00000000-0000-0000-0000-000000000000/events');
    expect(stream.status).toBe(401);
    const malformed = await call('GET', '/api/tasks', { headers: { authorization: 'Basic YW5hOnNlY3JldA==' } });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error?.message).toBe('the Authorization header must be "Bearer <token>"');
  });

  it('answers bad input with 4xx and a message, and goes on serving', async () => {
    const notJson = await call('POST', '/api/tasks', { who: 'ana', body: '{"goal": ' });
    expect(notJson.status).toBe(400);
    expect(notJson.json.error?.code).toBe('INVALID_ARGUMENT');
    expect(notJson.json.error?.message).toMatch(/^the request body is not valid JSON/);
    const typo = await call('POST', '/api/tasks', { who: 'ana', body: { gaol: 'x', language: 'python' } });
    expect(typo.json.error?.message).toMatch(/unknown field\(s\) "gaol"/);
    const plainText = await fetch(`${base}/api/tasks`, { method: 'POST', headers: { authorization: `Bearer ${tokens.ana}`, 'content-type': 'text/plain' }, body: 'goal' });
    expect(plainText.status).toBe(400);
    const unknownTask = await call('GET', '/api/tasks/00000000-0000-0000-0000-000000000000', { who: 'ana' });
    expect(unknownTask.status).toBe(404);
    expect(unknownTask.json.error?.code).toBe('NOT_FOUND');
    const unknownRoute = await call('POST', '/api/nothing', { who: 'ana', body: {} });
    expect(unknownRoute.status).toBe(404);
    const crossSite = await call('POST', '/api/tasks', { who: 'ana', body: { goal: 'x', language: 'python' }, headers: { origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect(crossSite.json.error?.message).toMatch(/^requests from pages of https:\/\/evil\.example are refused: use the dashboard itself/);
    // Still serving.
    expect((await call('GET', '/api/tasks?pageSize=5', { who: 'vic' })).status).toBe(200);
  });

  it('lets a viewer read but not submit or approve, with the role it lacks in the message', async () => {
    const refused = await call('POST', '/api/tasks', { who: 'vic', body: { goal: approved!.goal, language: 'python' } });
    expect(refused.status).toBe(403);
    expect(refused.json.error?.code).toBe('PERMISSION_DENIED');
    expect(refused.json.error?.message).toMatch(/vic may not submit tasks: that needs the submitter role/);
    const lessons = await call('GET', '/api/lessons', { who: 'vic' });
    expect(lessons.status).toBe(200);
    // Profiles come from an orchestrator that serves ListProfiles; an older one answers UNIMPLEMENTED, said as such.
    const profiles = await call('GET', '/api/profiles', { who: 'vic' });
    if (profiles.status !== 200) expect(profiles).toMatchObject({ status: 501, json: { error: { code: 'UNIMPLEMENTED' } } });
  });

  it('submits a task, follows its events live to the approval gate, approves it and sees it succeed', async () => {
    const submitted = await call('POST', '/api/tasks', { who: 'ana', body: { goal: approved!.goal, language: 'python', requireApproval: true, review: 'off', audit: 'off', reprompt: 'off', requestId: 'web-test-1' } });
    expect(submitted.status).toBe(201);
    const task = submitted.json['task'] as { id: string; status: string; submittedBy: string };
    expect(task).toMatchObject({ status: 'TASK_STATUS_QUEUED', submittedBy: 'ana' });
    // The same request id is the same task (a double click).
    expect(((await call('POST', '/api/tasks', { who: 'ana', body: { goal: approved!.goal, language: 'python', requireApproval: true, requestId: 'web-test-1' } })).json['task'] as { id: string }).id).toBe(task.id);

    const untilGate = await readEvents(task.id, 'vic', (event) => event.event === 'task-event' && JSON.parse(event.data).approvalRequested !== undefined);
    const gate = (JSON.parse(untilGate.at(-1)!.data) as { approvalRequested: { gate: { gateId: string; kind: string } } }).approvalRequested.gate;
    expect(gate.kind).toBe('APPROVAL_KIND_FINAL_RESULT');
    const sequences = untilGate.map((event) => Number(event.id));
    expect(sequences).toEqual(sequences.map((_, index) => index + 1));
    expect(JSON.parse(untilGate[0]!.data)).toMatchObject({ sequence: 1, taskSubmitted: { task: { goal: approved!.goal } } });

    const waiting = await call('GET', `/api/tasks/${task.id}`, { who: 'vic' });
    expect(waiting.json['task']).toMatchObject({ status: 'TASK_STATUS_AWAITING_APPROVAL', pendingGateId: gate.gateId });
    expect((waiting.json['links'] as { trace: string }).trace).toMatch(new RegExp(`^http://grafana\\.test/d/ratchet-tasks/ratchet-tasks\\?var-task_id=${task.id}&var-trace_id=[0-9a-f]*$`));

    // Another team does not see the task; a viewer may not decide; a bad decision is said.
    expect((await call('GET', `/api/tasks/${task.id}`, { who: 'olga' })).status).toBe(404);
    expect((await call('POST', `/api/tasks/${task.id}/approvals/${gate.gateId}`, { who: 'vic', body: { decision: 'approve' } })).status).toBe(403);
    expect((await call('POST', `/api/tasks/${task.id}/approvals/${gate.gateId}`, { who: 'ana', body: { decision: 'maybe' } })).status).toBe(400);

    const decided = await call('POST', `/api/tasks/${task.id}/approvals/${gate.gateId}`, { who: 'ana', body: { decision: 'approve', comment: 'looks right' } });
    expect(decided.status).toBe(200);
    expect(decided.json['gate']).toMatchObject({ decision: 'APPROVAL_DECISION_APPROVED', approver: 'ana', comment: 'looks right' });

    // Resuming after the last event seen, the stream goes on to the end.
    const rest = await readEvents(task.id, 'vic', () => false, Number(untilGate.at(-1)!.id) + 1);
    expect(rest.at(-1)).toEqual({ event: 'end', data: '{}' });
    const completed = rest.map((event) => (event.event === 'task-event' ? (JSON.parse(event.data) as { taskCompleted?: { status: string } }).taskCompleted : undefined)).find((done) => done !== undefined);
    expect(completed?.status).toBe('TASK_STATUS_SUCCEEDED');

    const done = await call('GET', `/api/tasks/${task.id}`, { who: 'vic' });
    expect(done.json['task']).toMatchObject({ status: 'TASK_STATUS_SUCCEEDED' });
    const iterations = done.json['iterations'] as { testReport: { passed: number; total: number }; files: { path: string }[] }[];
    expect(iterations[0]?.testReport).toMatchObject({ passed: 2, total: 2 });
    expect(done.json['approvals']).toEqual([expect.objectContaining({ gateId: gate.gateId, decision: 'APPROVAL_DECISION_APPROVED' })]);

    const listed = await call('GET', '/api/tasks?status=succeeded', { who: 'vic' });
    expect((listed.json['tasks'] as { id: string }[]).map((item) => item.id)).toContain(task.id);
    expect((await call('GET', '/api/tasks?status=succeeded', { who: 'olga' })).json['tasks'] ?? []).toEqual([]);
  });

  it('refuses a request addressed by another name with 421, naming the setting (a DNS-rebinding page)', async () => {
    const port = new URL(base).port;
    // A page of evil.example whose name was made to resolve to this host: its requests carry its own name as Host and Origin.
    const goals = async () => ((await call('GET', '/api/tasks?pageSize=100', { who: 'ana' })).json['tasks'] as { goal: string }[] | undefined ?? []).map((task) => task.goal);
    const before = await goals();
    const rebound = { host: `evil.example:${port}`, origin: `http://evil.example:${port}`, 'sec-fetch-site': 'same-origin', authorization: `Bearer ${tokens.ana}` };
    const submit = await rawCall('POST', '/api/tasks', rebound, { goal: approved!.goal, language: 'python' });
    expect(submit.status).toBe(421);
    expect(submit.json.error?.code).toBe('PERMISSION_DENIED');
    expect(submit.json.error?.message).toBe(
      `this dashboard answers to localhost, 127.0.0.1, [::1], dashboard.test, proxy.test:8443 only, not to the name "evil.example:${port}": if people open it by that name, add the name to web.allowedHosts in config/web.yaml (or RATCHET_WEB_ALLOWED_HOSTS, comma-separated)`,
    );
    expect((await rawCall('GET', '/api/tasks', rebound)).status).toBe(421);
    expect((await rawCall('GET', '/', { host: 'evil.example' })).status).toBe(421);
    expect((await rawCall('GET', '/api/tasks', { host: 'proxy.test:8080', authorization: `Bearer ${tokens.vic}` })).status).toBe(421);
    // Nothing was submitted.
    expect(await goals()).toEqual(before);
  });

  it("refuses with 403 a change posted by another site's page to the right name", async () => {
    const port = new URL(base).port;
    const crossSite = await rawCall('POST', '/api/tasks', { host: `127.0.0.1:${port}`, origin: 'http://evil.example', authorization: `Bearer ${tokens.ana}` }, { goal: 'x', language: 'python' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.json.error?.message).toMatch(/^requests from pages of http:\/\/evil\.example are refused: use the dashboard itself/);
    const fetchMetadata = await rawCall('POST', '/api/tasks', { host: `127.0.0.1:${port}`, 'sec-fetch-site': 'cross-site', authorization: `Bearer ${tokens.ana}` }, { goal: 'x', language: 'python' });
    expect(fetchMetadata.status).toBe(403);
  });

  it('answers its loopback names with any port and the configured names, through to the orchestrator', async () => {
    const port = new URL(base).port;
    const unknownTask = '/api/tasks/00000000-0000-0000-0000-000000000000/cancel';
    for (const [host, origin] of [
      [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`],
      [`localhost:${port}`, `http://localhost:${port}`],
      [`[::1]:${port}`, `http://[::1]:${port}`],
      ['dashboard.test', 'https://dashboard.test'],
      ['DASHBOARD.test:9000', 'http://dashboard.test:9000'],
      ['proxy.test:8443', 'https://proxy.test:8443'],
    ] as const) {
      const page = await rawCall('GET', '/', { host });
      expect([host, page.status]).toEqual([host, 200]);
      expect(page.text).toContain('<div id="root"></div>');
      expect([host, (await rawCall('GET', '/api/tasks?pageSize=1', { host, authorization: `Bearer ${tokens.vic}`, 'sec-fetch-site': 'same-origin' })).status]).toEqual([host, 200]);
      // A change from its own page reaches the orchestrator, which answers for the task.
      const cancel = await rawCall('POST', unknownTask, { host, origin, 'sec-fetch-site': 'same-origin', authorization: `Bearer ${tokens.ana}` }, {});
      expect([host, cancel.status, cancel.json.error?.code]).toEqual([host, 404, 'NOT_FOUND']);
    }
  });

  it('stops on SIGTERM within its grace period', async () => {
    const stream = fetch(`${base}/api/tasks?pageSize=1`, { headers: { authorization: `Bearer ${tokens.vic}` } });
    expect((await stream).status).toBe(200);
    const exit = await web.terminate('SIGTERM', 10_000);
    expect(exit).toMatchObject({ code: 0 });
    expect(web.output()).toMatch(/"msg":"stopped"/);
  });
});
