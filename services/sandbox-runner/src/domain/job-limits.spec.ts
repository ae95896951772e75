import { describe, expect, it } from '@jest/globals';
import type { SourceFile } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { sandboxJob } from '../../test/jobs';
import { defaultLimits, maxSandboxFiles, validateJob, validateSandboxInput } from './job-limits';

const files = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`pkg/m${index}.py`, 'x = 1\n']));

describe('what a job or a session may put in a sandbox', () => {
  it('takes a workspace-sized job (the test run of a workspace task) and refuses one past the cap, naming it', () => {
    expect(() => validateJob(sandboxJob('big', ['true'], files(5_000)), defaultLimits)).not.toThrow();
    expect(() => validateJob(sandboxJob('too-big', ['true'], files(maxSandboxFiles + 1)), defaultLimits)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining(`at most ${maxSandboxFiles}`) }));
  });

  it('refuses paths outside the work directory, files over the work directory, limits over the maxima and bad variable names', () => {
    const check = (input: Partial<SourceFile>[], env: Record<string, string> = {}, limits = defaultLimits) =>
      () => validateSandboxInput(input.map((file) => ({ path: 'a.py', content: '', ...file })), env, limits, { maxFiles: 10, what: 'session' });
    expect(check([{ path: '../x.py' }])).toThrow(/leaves the workspace/);
    expect(check([{ content: 'x'.repeat(100) }], {}, { ...defaultLimits, workDirBytes: 10 })).toThrow(/the session's files take 100 bytes/);
    expect(check([], {}, { ...defaultLimits, cpus: 1_000 })).toThrow(/limits.cpus is 1000/);
    expect(check([], { 'BAD-NAME': 'x' })).toThrow(/not a valid variable name/);
    expect(check([{}])).not.toThrow();
  });
});
