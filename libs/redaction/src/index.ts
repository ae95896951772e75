export { configuredSecrets, CONFIGURED_SECRET_RULE, createRedactor, defaultRedactionRules, HIGH_ENTROPY_RULE, loadRedactionRules, redactStrings, redactText } from './redact';
export type { EntropySettings, RedactionFinding, RedactionResult, RedactionRule, RedactionRules, Redactor } from './redact';
