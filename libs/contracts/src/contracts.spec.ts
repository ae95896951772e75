// Smoke tests of the generated contracts: wire round-trips of the shapes that
// depend on ts-proto options (oneof unions, bytes as Buffer, Timestamp as Date,
// int64 as number, maps) and the service definitions the transports rely on.
import {
  CoderServiceDefinition,
  HealthRequest,
  HealthResponse,
  HealthStatus,
  Language,
  MemoryServiceDefinition,
  OrchestratorServiceDefinition,
  OrchestratorServiceService,
  Phase,
  PlannerServiceDefinition,
  ReflectorServiceDefinition,
  SafetyServiceDefinition,
  SandboxJobResult,
  SandboxRunnerServiceDefinition,
  StopReason,
  Task,
  TaskEvent,
  TaskStatus,
  TestCaseStatus,
  TesterServiceDefinition,
  taskStatusFromJSON,
  taskStatusToJSON,
} from './index';

const roundTrip = <T>(codec: { encode(message: T): { finish(): Uint8Array }; decode(bytes: Uint8Array): T }, message: T): T =>
  codec.decode(codec.encode(message).finish());

describe('messages', () => {
  it('round-trips a TaskEvent whose oneof payload carries a test report', () => {
    const event = TaskEvent.fromPartial({
      taskId: 'task-1',
      sequence: 2 ** 40, // int64 beyond 32 bits stays an exact number
      time: new Date('2025-01-02T03:04:05.678Z'),
      iteration: 3,
      payload: {
        $case: 'testRunCompleted',
        testRunCompleted: {
          exitCode: 1,
          jobId: 'job-9',
          report: {
            framework: 'pytest',
            total: 2,
            passed: 1,
            failed: 1,
            parsed: true,
            duration: { seconds: 1, nanos: 500_000_000 },
            cases: [
              { name: 'test_ok', status: TestCaseStatus.TEST_CASE_STATUS_PASSED },
              { name: 'test_bad', status: TestCaseStatus.TEST_CASE_STATUS_FAILED, failureMessage: 'assert 1 == 2' },
            ],
          },
        },
      },
    });

    const decoded = roundTrip(TaskEvent, event);

    expect(decoded).toEqual(event);
    expect(decoded.sequence).toBe(2 ** 40);
    expect(decoded.time).toBeInstanceOf(Date);
    if (decoded.payload?.$case !== 'testRunCompleted') throw new Error(`unexpected payload ${decoded.payload?.$case}`);
    expect(decoded.payload.testRunCompleted.report?.cases.map((testCase) => testCase.name)).toEqual(['test_ok', 'test_bad']);
    expect(decoded.payload.testRunCompleted.report?.duration).toEqual({ seconds: 1, nanos: 500_000_000 });
  });

  it('round-trips a phase event through JSON with proto enum names', () => {
    const event = TaskEvent.fromPartial({
      taskId: 'task-1',
      sequence: 1,
      payload: { $case: 'phaseStarted', phaseStarted: { phase: Phase.PHASE_CODING, attempt: 1 } },
    });

    const json = TaskEvent.toJSON(event) as { phaseStarted?: { phase?: string } };

    expect(json.phaseStarted?.phase).toBe('PHASE_CODING');
    expect(TaskEvent.fromJSON(json)).toEqual(event);
  });

  it('round-trips a SandboxJobResult with raw, non-UTF-8 output bytes', () => {
    const stdout = Buffer.from([0x00, 0xff, 0xfe, 0x41, 0x0a]);
    const result = SandboxJobResult.fromPartial({
      jobId: 'job-1',
      taskId: 'task-1',
      exitCode: -1,
      stdout,
      stderr: Buffer.from('Killed\n'),
      stdoutTruncated: true,
      timedOut: false,
      oomKilled: true,
      resourceUsage: { peakMemoryBytes: 512 * 1024 * 1024, wallTime: { seconds: 2, nanos: 0 } },
    });

    const decoded = roundTrip(SandboxJobResult, result);

    expect(Buffer.isBuffer(decoded.stdout)).toBe(true);
    expect(Buffer.compare(decoded.stdout, stdout)).toBe(0);
    expect(decoded.stderr.toString('utf8')).toBe('Killed\n');
    expect(decoded.exitCode).toBe(-1);
    expect(decoded.oomKilled).toBe(true);
    expect(decoded.stdoutTruncated).toBe(true);
    expect(decoded.resourceUsage?.peakMemoryBytes).toBe(512 * 1024 * 1024);
  });

  it('round-trips a Task with timestamps, a budget and labels', () => {
    const createdAt = new Date('2025-06-01T12:00:00.123Z');
    const task = Task.fromPartial({
      id: 'task-1',
      goal: 'Parse ISO dates',
      language: Language.LANGUAGE_PYTHON,
      status: TaskStatus.TASK_STATUS_FAILED,
      statusReason: 'max iterations reached',
      stopReason: StopReason.STOP_REASON_MAX_ITERATIONS,
      currentIteration: 5,
      completedIterations: 5,
      budget: { maxIterations: 5, maxTokens: 200_000, maxCostUsd: 1.5, maxWallTime: { seconds: 900, nanos: 0 } },
      usage: { promptTokens: 150_000, completionTokens: 20_000, costUsd: 0.42, modelCalls: 17 },
      createdAt,
      updatedAt: new Date(createdAt.getTime() + 60_000),
      labels: { team: 'payments', ticket: 'PAY-12' },
      workspace: [{ path: 'src/dates.py', content: 'def parse(s):\n    ...\n' }],
    });

    const decoded = roundTrip(Task, task);

    expect(decoded).toEqual(task);
    expect(decoded.createdAt).toBeInstanceOf(Date);
    expect(decoded.createdAt?.getTime()).toBe(createdAt.getTime());
    expect(decoded.labels).toEqual({ team: 'payments', ticket: 'PAY-12' });
    expect(decoded.startedAt).toBeUndefined();
  });

  it('converts enums to and from their proto names', () => {
    expect(taskStatusToJSON(TaskStatus.TASK_STATUS_AWAITING_APPROVAL)).toBe('TASK_STATUS_AWAITING_APPROVAL');
    expect(taskStatusFromJSON('TASK_STATUS_SUCCEEDED')).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(TaskStatus.TASK_STATUS_UNSPECIFIED).toBe(0);
  });
});

describe('service definitions', () => {
  const methodNames = (definition: { methods: Record<string, { name: string }> }) =>
    Object.values(definition.methods).map((method) => method.name);

  it('names every service in the ratchet.v1 package with its RPCs', () => {
    expect(PlannerServiceDefinition.fullName).toBe('ratchet.v1.PlannerService');
    expect(methodNames(PlannerServiceDefinition)).toEqual(['CreatePlan', 'Reprompt', 'Health']);
    expect(methodNames(CoderServiceDefinition)).toEqual(['WriteCode', 'Health']);
    expect(methodNames(TesterServiceDefinition)).toEqual(['WriteTests', 'RunTests', 'Health']);
    expect(methodNames(ReflectorServiceDefinition)).toEqual(['Reflect', 'Review', 'Audit', 'Health']);
    expect(methodNames(SafetyServiceDefinition)).toEqual(['CheckCode', 'CheckCommand', 'CheckDependencies', 'Health']);
    expect(methodNames(SandboxRunnerServiceDefinition)).toEqual(['RunJob', 'Health', 'OpenSession', 'SessionExec', 'SessionReadFiles', 'SessionWriteFiles', 'SessionListFiles', 'SessionDiff', 'CloseSession']);
    expect(methodNames(MemoryServiceDefinition)).toEqual([
      'RetrieveLessons',
      'RecordFailure',
      'RecordSuccess',
      'GetLesson',
      'ListLessons',
      'ForgetLesson',
      'ImportLessons',
      'ReindexLessons',
      'Health',
    ]);
    expect(OrchestratorServiceDefinition.fullName).toBe('ratchet.v1.OrchestratorService');
    expect(methodNames(OrchestratorServiceDefinition)).toEqual([
      'SubmitTask',
      'GetTask',
      'ListTasks',
      'WatchTask',
      'CancelTask',
      'ResumeTask',
      'Approve',
      'Answer',
      'ListProfiles',
      'Health',
      'ListLessons',
      'GetLesson',
      'ForgetLesson',
      'ImportLessons',
      'ReindexLessons',
    ]);
  });

  it('shares the Health messages across services and decodes with the definition codecs', () => {
    const health = PlannerServiceDefinition.methods.health;
    expect(health.requestType).toBe(HealthRequest);
    expect(health.responseType).toBe(HealthResponse);
    expect(SandboxRunnerServiceDefinition.methods.health.responseType).toBe(HealthResponse);

    const response = HealthResponse.fromPartial({
      service: 'planner',
      version: '0.1.0',
      status: HealthStatus.HEALTH_STATUS_DEGRADED,
      uptime: { seconds: 42, nanos: 0 },
      dependencies: [{ name: 'model:planner', status: HealthStatus.HEALTH_STATUS_NOT_SERVING, detail: 'connection refused' }],
    });
    const bytes = health.responseType.encode(response).finish();
    expect(health.responseType.decode(bytes)).toEqual(response);
  });

  it('marks WatchTask as server streaming in both the generic and the grpc-js definitions', () => {
    expect(OrchestratorServiceDefinition.methods.watchTask.requestStream).toBe(false);
    expect(OrchestratorServiceDefinition.methods.watchTask.responseStream).toBe(true);
    expect(OrchestratorServiceService.watchTask.path).toBe('/ratchet.v1.OrchestratorService/WatchTask');
    expect(OrchestratorServiceService.watchTask.responseStream).toBe(true);
    expect(OrchestratorServiceService.submitTask.responseStream).toBe(false);
  });
});
