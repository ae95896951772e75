import { auditorConfigSection, reflectorConfigSection, reviewerConfigSection, type RoleBudgetSettings } from '@ratchet/agent';
import { definitionExtractorLoader, type DefinitionExtractorLoader } from '@ratchet/code-intel';
import { type Prompts } from '@ratchet/prompting';
import type { CallContext } from '@ratchet/bus';
import type { AuditRequest, AuditResponse, ReflectRequest, ReflectResponse, ReviewRequest, ReviewResponse } from '@ratchet/contracts';
import type { RoleModel } from '@ratchet/llm';
import { auditHandler } from './handlers/audit';
import { reflectHandler } from './handlers/reflect';
import { reviewHandler } from './handlers/review';

export { outputForPrompt, reflectPromptValues } from './handlers/reflect';
export { changeSection } from './handlers/review';
export { formatScannerFindings, maxJudgedScannerFindings } from './handlers/audit';
export { reflectionReplySchema } from './domain/reflection-reply';
export { auditReplySchema, maxFindingsPerReply, reviewReplySchema } from './domain/review-reply';
export type { AuditReply, ReviewReply } from './domain/review-reply';
export { ChangeKind, defaultChangeTokens, describeChange, fitChange } from './domain/change';
export type { Change, ChangedFile, ChangePart, Hunk } from './domain/change';
export { auditFindingBlocks, normalizeCwe, owaspCategoryOf, parseSeverity, placeFinding, reviewFindingBlocks, SeverityName } from './domain/findings';
export type { Placement } from './domain/findings';

export interface ReflectorServiceOptions {
  /** The reflector role's model (Reflect). */
  readonly roleModel: RoleModel;
  /** The reviewer role's model (Review): its own setting in config/models.yaml. */
  readonly reviewerModel: RoleModel;
  /** The security auditor role's model (Audit): its own setting in config/models.yaml. */
  readonly auditorModel: RoleModel;
  readonly prompts: Prompts;
  /** Each role's prompt budget (the `reflector`, `reviewer` and `auditor` config sections); default each section's default. */
  readonly settings?: ReflectorSettings;
  /** Outlines files for the reflector's repository map; default the tree-sitter extractor, loaded on first use. */
  readonly extractor?: DefinitionExtractorLoader;
}

/** The prompt budgets of the roles the reflector serves. */
export interface ReflectorSettings {
  readonly reflector?: RoleBudgetSettings;
  readonly reviewer?: RoleBudgetSettings;
  readonly auditor?: RoleBudgetSettings;
}

export interface ReflectorService {
  readonly implementation: {
    reflect(request: ReflectRequest, context: CallContext): Promise<ReflectResponse>;
    review(request: ReviewRequest, context: CallContext): Promise<ReviewResponse>;
    audit(request: AuditRequest, context: CallContext): Promise<AuditResponse>;
  };
  close(): Promise<void>;
}

/**
 * The reflector's RPCs, ready for `hostService`: Reflect (the reflector
 * role), Review (the reviewer role) and Audit (the security auditor role),
 * each with its own model, prompt and prompt budget.
 *
 * @throws AppError CONFIG_INVALID when the reflector, reviewer or auditor prompt uses unknown placeholders.
 */
export function createReflectorService(options: ReflectorServiceOptions): ReflectorService {
  const settings = options.settings ?? {};
  const extractor = options.extractor ?? definitionExtractorLoader();
  return {
    implementation: {
      reflect: reflectHandler(options.roleModel, options.prompts.reflector, settings.reflector ?? reflectorConfigSection.parse({}), extractor),
      review: reviewHandler(options.reviewerModel, options.prompts.reviewer, settings.reviewer ?? reviewerConfigSection.parse({})),
      audit: auditHandler(options.auditorModel, options.prompts.auditor, settings.auditor ?? auditorConfigSection.parse({})),
    },
    close: () => Promise.resolve(),
  };
}
