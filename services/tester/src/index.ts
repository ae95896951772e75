import { testerConfigSection, type RoleBudgetSettings } from '@ratchet/agent';
import { definitionExtractorLoader, type DefinitionExtractorLoader } from '@ratchet/code-intel';
import { type Prompts } from '@ratchet/prompting';
import type { CallContext } from '@ratchet/bus';
import type {
  RunTestsRequest,
  RunTestsResponse,
  SandboxLimits,
  WriteTestsRequest,
  WriteTestsResponse,
} from '@ratchet/contracts';
import type { RoleModel } from '@ratchet/llm';
import { runTestsHandler, type SandboxJobs } from './handlers/run-tests';
import { writeTestsHandler } from './handlers/write-tests';

export { customRunPassed, reportPath, reportPathVariable, runPassed, testCommand } from './domain/test-command';
export { testReplySchema } from './domain/test-reply';
export type { SandboxJobs } from './handlers/run-tests';
export { testPromptValues } from './handlers/write-tests';

export interface TesterServiceOptions {
  readonly roleModel: RoleModel;
  readonly prompts: Prompts;
  /** The sandbox runners. */
  readonly sandbox: SandboxJobs;
  /** Limits of a test run when the request sets none. */
  readonly limits: SandboxLimits;
  /** Sandbox image the tests run in. */
  readonly image: string;
  /** The tester's prompt budget (the `tester` config section); default the section's default. */
  readonly settings?: RoleBudgetSettings;
  /** Outlines files for the repository map; default the tree-sitter extractor, loaded on first use. */
  readonly extractor?: DefinitionExtractorLoader;
}

export interface TesterService {
  readonly implementation: {
    writeTests(request: WriteTestsRequest, context: CallContext): Promise<WriteTestsResponse>;
    runTests(request: RunTestsRequest, context: CallContext): Promise<RunTestsResponse>;
  };
  close(): Promise<void>;
}

/**
 * The tester's RPCs, ready for `hostService`.
 *
 * @throws AppError CONFIG_INVALID when the tester prompt uses unknown placeholders.
 */
export function createTesterService(options: TesterServiceOptions): TesterService {
  return {
    implementation: {
      writeTests: writeTestsHandler(options.roleModel, options.prompts.tester, options.settings ?? testerConfigSection.parse({}), options.extractor ?? definitionExtractorLoader()),
      runTests: runTestsHandler(options.sandbox, options.limits, options.image),
    },
    close: () => Promise.resolve(),
  };
}
