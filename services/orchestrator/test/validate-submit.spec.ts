import { describe, expect, it } from '@jest/globals';
import { Language, MemoryUse, TestEdits, type SubmitTaskRequest } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { maxFiles, validateSubmit } from '../src/handlers/validate-submit';

const request = (overrides: Partial<SubmitTaskRequest> = {}): SubmitTaskRequest => ({
  goal: 'make the failing test pass',
  language: Language.LANGUAGE_PYTHON,
  budget: undefined,
  workspace: [],
  acceptanceTests: [],
  approvalPolicy: undefined,
  labels: {},
  requestId: '',
  testCommand: [],
  testEdits: TestEdits.TEST_EDITS_UNSPECIFIED,
  project: '',
  memory: MemoryUse.MEMORY_USE_UNSPECIFIED,
  ...overrides,
});
const files = (count: number) => Array.from({ length: count }, (_, index) => ({ path: `pkg/m${index}.py`, content: 'x = 1\n' }));

describe('validateSubmit', () => {
  it('takes a workspace as large as the CLI sends by default, and refuses one file more', () => {
    expect(() => validateSubmit(request({ workspace: files(maxFiles) }))).not.toThrow();
    expect(maxFiles).toBe(20_000);
    expect(() => validateSubmit(request({ workspace: files(maxFiles + 1) }))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('workspace has 20001 files') }));
  });

  it("takes a project's test command with its workspace, and refuses one without a workspace or malformed", () => {
    expect(() => validateSubmit(request({ workspace: files(2), testCommand: ['npm', 'test'] }))).not.toThrow();
    expect(() => validateSubmit(request({ testCommand: ['npm', 'test'] }))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('test_command needs a workspace') }));
    expect(() => validateSubmit(request({ workspace: files(2), testCommand: [' ', 'test'] }))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('test_command names no program') }));
  });

  it('refuses a test_edits value it does not know', () => {
    expect(() => validateSubmit(request({ testEdits: TestEdits.TEST_EDITS_ALLOWED }))).not.toThrow();
    expect(() => validateSubmit(request({ testEdits: 7 as TestEdits }))).toThrow(expect.objectContaining({ message: expect.stringContaining('test_edits is 7') }));
  });
});
