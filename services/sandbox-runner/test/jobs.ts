import { Language, SandboxDriver, type SandboxJob } from '@ratchet/contracts';

/**
 * A job for the runner's tests: `argv` over `files` in the work directory,
 * the runner's default limits, no report; `overrides` for the rest.
 */
export function sandboxJob(jobId: string, argv: readonly string[], files: Readonly<Record<string, string>> = {}, overrides: Partial<SandboxJob> = {}): SandboxJob {
  return {
    jobId,
    taskId: 'task',
    iteration: 1,
    language: Language.LANGUAGE_PYTHON,
    files: Object.entries(files).map(([path, content]) => ({ path, content })),
    dataFiles: [],
    setupCommand: '',
    commands: [{ name: 'run', argv: [...argv], workingDirectory: '', timeout: undefined }],
    env: {},
    limits: undefined,
    driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
    image: '',
    testReportPath: '',
    protectedPaths: [],
    dependencies: [],
    enqueuedAt: undefined,
    deadline: undefined,
    ...overrides,
  };
}
