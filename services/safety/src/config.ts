import { sandboxConfigSection } from '@ratchet/agent';
import { configSection, extendConfigSchema, loadConfig, type DeepReadonly } from '@ratchet/config';
import { z } from 'zod';
import { BanditMode, CodeAction, defaultCodeCheckSettings, defaultCodeRules, type CodeCheckSettings, type CodeRule } from './domain/code-policy';
import { CodeSource } from './domain/command-code';
import { PathClass } from './domain/command-paths';
import { CommandDecision, CommandRuleId, reasonPlaceholders, type CommandPolicy, type CommandRule } from './domain/command-policy';
import { defaultCommandPolicy, defaultCommandRules } from './domain/command-rules';
import { eslintRulePrefix, EslintRule } from './domain/eslint-findings';
import { Confidence, RuleId, Severity } from './domain/findings';

/** The keys of a rule that match something; a rule needs at least one. */
const matcherKeys = [
  'programs',
  'dynamicProgram',
  'subcommands',
  'flags',
  'args',
  'operands',
  'targets',
  'writes',
  'pipedInto',
  'recursiveFunction',
  'codeFrom',
  'code',
  'gitConfig',
  'remote',
  'environment',
  'opens',
] as const;
const reservedIds = new Set<string>(Object.values(CommandRuleId));

const names = z.array(z.string().min(1)).min(1);
const places = z.array(z.enum(PathClass)).min(1);

/** One rule of `commands.rules`; see CommandRule for what each key matches. */
const commandRuleSchema = z
  .object({
    id: z
      .string()
      .regex(/^cmd\.[a-z0-9]+(-[a-z0-9]+)*$/, 'must be "cmd." and a kebab-case name, e.g. cmd.git-push')
      .refine((id) => !reservedIds.has(id), 'is reserved for findings the policy makes itself'),
    decision: z.enum(CommandDecision),
    reason: z
      .string()
      .min(1)
      .refine((reason) => !reason.includes('\n'), 'must be one line')
      .refine(
        (reason) => [...reason.matchAll(/\{([a-zA-Z]+)\}/g)].every((match) => (reasonPlaceholders as readonly string[]).includes(match[1] ?? '')),
        `may only use the placeholders ${reasonPlaceholders.map((name) => `{${name}}`).join(', ')}`,
      ),
    remediation: z.string().min(1).optional(),
    programs: names.optional(),
    dynamicProgram: z.boolean().optional(),
    subcommands: names.optional(),
    flags: names.optional(),
    args: names.optional(),
    operands: z.boolean().optional(),
    targets: places.optional(),
    writes: places.optional(),
    pipedInto: names.optional(),
    recursiveFunction: z.boolean().optional(),
    codeFrom: z.array(z.enum(CodeSource)).min(1).optional(),
    code: z.array(z.string().min(1).superRefine(regexProblem)).min(1).optional(),
    gitConfig: z
      .array(z.string().min(1))
      .min(1)
      .refine((keys) => keys.every((key) => key === key.toLowerCase()), 'must be lowercase: git compares configuration keys ignoring case, and so do the patterns')
      .optional(),
    remote: z.boolean().optional(),
    environment: names.optional(),
    opens: places.optional(),
  })
  .strict()
  .refine((rule) => matcherKeys.some((key) => rule[key] !== undefined), `a rule needs at least one of ${matcherKeys.join(', ')}`);

/** A `code` pattern must compile as a JavaScript regular expression. */
function regexProblem(source: string, context: z.RefinementCtx): void {
  try {
    new RegExp(source, 'm');
  } catch (error) {
    context.addIssue({ code: 'custom', message: `is not a regular expression (${(error as Error).message}); write it in JavaScript syntax, e.g. '\\bos\\.system\\b'` });
  }
}

const absoluteDirectory = z
  .string()
  .refine((directory) => directory.startsWith('/') && directory.replace(/\/+/g, '/') !== '/', 'must be an absolute directory other than /');

/**
 * The `commands` section (config/safety.yaml): the policy CheckCommand
 * applies to every command line the coder wants to run in the sandbox.
 * Its `rules` default to the built-in list, which safety.yaml writes out.
 */
export const commandsConfigSection = configSection({
  /** For commands no rule matches: allow, ask or deny. */
  defaultDecision: z.enum(CommandDecision).default(defaultCommandPolicy.defaultDecision),
  /** Longest command line checked, characters; longer ones are refused (INVALID_ARGUMENT). */
  maxCommandLineChars: z.number().int().min(1).max(1_000_000).default(defaultCommandPolicy.maxCommandLineChars),
  /** How deep shell strings inside shell strings (bash -c "sh -c '...'") are followed; deeper is denied. */
  maxNestingDepth: z.number().int().min(0).max(10).default(defaultCommandPolicy.maxNestingDepth),
  /** The sandbox's work directory, absolute; commands start there. */
  workDirectory: absoluteDirectory.default(defaultCommandPolicy.workDirectory),
  /** Directories private to the sandbox where writing is fine, absolute. */
  scratchDirectories: z.array(absoluteDirectory).default(() => [...defaultCommandPolicy.scratchDirectories]),
  /** First match wins, per command. */
  rules: z
    .array(commandRuleSchema)
    .default(() => structuredClone(defaultCommandRules) as z.infer<typeof commandRuleSchema>[])
    .superRefine((rules, context) => {
      const seen = new Set<string>();
      rules.forEach((rule, index) => {
        if (seen.has(rule.id)) context.addIssue({ code: 'custom', path: [index, 'id'], message: `${rule.id} is used by an earlier rule; ids must be unique` });
        seen.add(rule.id);
      });
    }),
});

export type CommandsSettings = DeepReadonly<z.infer<typeof commandsConfigSection>>;

const knownRuleIds = new Set<string>([...Object.values(RuleId), ...Object.values(EslintRule).map((rule) => `${eslintRulePrefix}${rule}`)]);
const ruleIdHelp = 'a rule id such as py.sql-string-format, bandit.B602 or eslint.security/detect-eval-with-expression, where * matches any characters (bandit.B3*)';

/** A rule id or pattern of `code.rules[].ids`; exact ids must name a rule that exists, so a typo does not silently match nothing. */
const ruleIdPattern = z
  .string()
  .min(1)
  .superRefine((id, context) => {
    if (!/^[A-Za-z0-9.*/_-]+$/.test(id)) {
      context.addIssue({ code: 'custom', message: `${JSON.stringify(id)} is not ${ruleIdHelp}` });
    } else if (!id.includes('*') && !knownRuleIds.has(id) && !/^bandit\.B\d{3}$/.test(id)) {
      const near = nearestRuleIds(id);
      context.addIssue({ code: 'custom', message: `${id} is not a rule CheckCode reports; use ${ruleIdHelp}${near.length > 0 ? ` (closest: ${near.join(', ')})` : ''}` });
    }
  });

/** Up to five known rule ids of the same family (py., js., eslint.) sharing the most words with `id`. */
function nearestRuleIds(id: string): string[] {
  const words = (text: string) => text.toLowerCase().split(/[./_-]+/);
  const wanted = new Set(words(id));
  const family = words(id)[0];
  return [...knownRuleIds]
    .filter((known) => words(known)[0] === family)
    .map((known) => ({ known, shared: words(known).filter((word) => wanted.has(word)).length }))
    .sort((left, right) => right.shared - left.shared)
    .slice(0, 5)
    .map(({ known }) => known);
}

/** One entry of `code.rules`; see CodeRule. */
const codeRuleSchema = z
  .object({
    ids: z.array(ruleIdPattern).min(1),
    paths: z.array(z.string().min(1)).min(1).optional(),
    action: z.enum(CodeAction),
    reason: z.string().min(1).optional(),
  })
  .strict();

/** A severity and a confidence a finding must both reach. */
const thresholdSchema = (severity: Severity, confidence: Confidence) =>
  z
    .object({
      severity: z.enum(Severity).default(severity),
      confidence: z.enum(Confidence).default(confidence),
    })
    .strict()
    .prefault({});

/**
 * The `code` section (config/safety.yaml): which scanners CheckCode runs
 * besides the built-in rules, and what each finding makes of the verdict.
 * Its `rules` default to `defaultCodeRules`, which safety.yaml writes out.
 */
export const codeConfigSection = configSection({
  /** Bandit over the Python files in a sandbox job: auto (when a sandbox is configured), required, off. */
  bandit: z.enum(BanditMode).default(defaultCodeCheckSettings.bandit),
  /** Longest a Bandit job may take, seconds. */
  banditTimeoutSeconds: z.number().int().min(2).max(600).default(defaultCodeCheckSettings.banditTimeoutMs / 1_000),
  /** eslint-plugin-security over the JavaScript/TypeScript files, in-process. */
  eslint: z.boolean().default(defaultCodeCheckSettings.eslint),
  /** Findings no rule matches block when they reach both. */
  block: thresholdSchema(defaultCodeCheckSettings.policy.block.severity, defaultCodeCheckSettings.policy.block.confidence),
  /** ... and warn when they reach both; below, they are listed (allow). */
  warn: thresholdSchema(defaultCodeCheckSettings.policy.warn.severity, defaultCodeCheckSettings.policy.warn.confidence),
  /** First match wins, before the thresholds. */
  rules: z.array(codeRuleSchema).default(() => structuredClone(defaultCodeRules) as z.infer<typeof codeRuleSchema>[]),
});

export type CodeSettings = DeepReadonly<z.infer<typeof codeConfigSection>>;

/**
 * The safety process's config: the shared sections plus `commands`, `code`
 * and `sandbox`, of which it reads `sandbox.image`: the image the tests run
 * in, whose packages config/dependencies.yaml's `images` may list as provided.
 */
export const safetyConfigSchema = extendConfigSchema({ commands: commandsConfigSection, code: codeConfigSection, sandbox: sandboxConfigSection });

/** CheckCode's scanners and policy from the config section. */
export function codeCheckOf(settings: CodeSettings): CodeCheckSettings {
  return Object.freeze({
    policy: Object.freeze({ rules: settings.rules as readonly CodeRule[], block: settings.block, warn: settings.warn }),
    bandit: settings.bandit,
    banditTimeoutMs: settings.banditTimeoutSeconds * 1_000,
    eslint: settings.eslint,
  });
}

/**
 * CheckCode's scanners and policy from `configDir`: ratchet.yaml and
 * safety.yaml, then `RATCHET_CODE_*` variables, as the safety process reads
 * them. For embedded mode, which hosts the safety service without its process.
 *
 * @throws AppError CONFIG_INVALID listing every bad key and how to fix it.
 */
export function loadCodeCheck(configDir: string, env: Readonly<Record<string, string | undefined>> = process.env): CodeCheckSettings {
  return codeCheckOf(loadConfig({ schema: safetyConfigSchema, service: 'safety', configDir, env }).code);
}

/** The domain's policy from the config section. */
export function commandPolicyOf(settings: CommandsSettings): CommandPolicy {
  return Object.freeze({
    defaultDecision: settings.defaultDecision,
    maxCommandLineChars: settings.maxCommandLineChars,
    maxNestingDepth: settings.maxNestingDepth,
    workDirectory: settings.workDirectory,
    scratchDirectories: settings.scratchDirectories,
    rules: settings.rules as readonly CommandRule[],
  });
}

/**
 * The command policy from `configDir`: ratchet.yaml and safety.yaml, then
 * `RATCHET_COMMANDS_*` variables, as the safety process reads it. For
 * embedded mode, which hosts the safety service without its process.
 *
 * @throws AppError CONFIG_INVALID listing every bad key and how to fix it.
 */
export function loadCommandPolicy(configDir: string, env: Readonly<Record<string, string | undefined>> = process.env): CommandPolicy {
  return commandPolicyOf(loadConfig({ schema: safetyConfigSchema, service: 'safety', configDir, env }).commands);
}
