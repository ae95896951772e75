export { errorSignature, splitErrorMessage } from './error-signature';
export { formatFiles, formatFindings, formatLessons, formatPlan, formatReflections, formatTestReport } from './format';
export { languageFromProto, LanguageName, languageToProto, parseLanguageName, testConvention } from './language';
export type { TestConvention } from './language';
export { assertPlaceholders, loadPrompts, renderTemplate } from './prompts';
export type { Prompts, RolePrompt } from './prompts';
export { callRole, sumUsage } from './role-call';
export type { RoleCallOptions, RoleCallResult } from './role-call';
export { checkWorkspacePath, workspacePathProblem } from './workspace-path';
