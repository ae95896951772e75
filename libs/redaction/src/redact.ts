import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parseDocument } from 'yaml';
import { z } from 'zod';

/**
 * One redaction rule. Exactly one of `pattern` and `key` is set:
 * - `pattern`: a regular expression for the secret itself (an API key, a PEM
 *   block). When it has a group named `secret`, only that group is replaced,
 *   so the text around it (a URL's scheme and host) stays readable.
 * - `key`: a regular expression for a key name (`pass(?:word|wd)`); the value
 *   assigned to a key ending in it is replaced wherever it is assigned in code,
 *   env files, YAML, JSON, logfmt or URL query strings, so `password: x`
 *   becomes `password: [REDACTED:password]`.
 */
export interface RedactionRule {
  /** kebab-case; the replacement is `[REDACTED:<id>]`. */
  readonly id: string;
  readonly pattern?: string;
  /** Flags of `pattern`, from `imsu`. */
  readonly flags?: string;
  readonly key?: string;
}

/** The entropy check for secrets no rule knows by shape. */
export interface EntropySettings {
  readonly enabled: boolean;
  /** Shortest token checked, characters. */
  readonly minLength: number;
  /** Shannon entropy as a share of the most a token of its length can have (log2 of min(length, 64)); above it a token counts as random. */
  readonly threshold: number;
  /** Share of a token's characters in word-like runs (`Server`, `test`) at or above which it reads as an identifier or path, not a key. */
  readonly maxWordShare: number;
}

/** What a redactor looks for: config/redaction.yaml, or `defaultRedactionRules`. */
export interface RedactionRules {
  /** Applied in order; a later rule leaves what an earlier one redacted alone. */
  readonly rules: readonly RedactionRule[];
  readonly entropy: EntropySettings;
  /** Regular expressions; what a rule would redact is kept when one of them matches it. */
  readonly allowlist: readonly string[];
}

/** How many secrets one rule replaced. */
export interface RedactionFinding {
  readonly rule: string;
  readonly count: number;
}

export interface RedactionResult {
  readonly text: string;
  /** Rules that replaced something, by id in rule order (a pattern rule and a key rule sharing an id count together); empty when the text had no secrets. */
  readonly found: readonly RedactionFinding[];
}

export interface Redactor {
  /** `text` with every secret replaced by `[REDACTED:<rule>]`. Redacting the result again changes nothing. */
  redact(text: string): RedactionResult;
}

/** The id of findings of the entropy check. */
export const HIGH_ENTROPY_RULE = 'high-entropy';

/** The id of configured secrets found by value (`RedactorOptions.values`). */
export const CONFIGURED_SECRET_RULE = 'configured-secret';

/** Secrets shorter than this are not looked for by value: they would match ordinary text. */
const minSecretChars = 8;

export interface RedactorOptions {
  /**
   * Secrets this process was configured with (API keys, tokens,
   * passwords: see `configuredSecrets`), replaced wherever they appear,
   * whatever their format, before any rule runs. Values under 8 characters
   * are ignored.
   */
  readonly values?: readonly string[];
}

/**
 * The built-in rules; config/redaction.yaml writes the same ones out, with a
 * reason for each. Specific shapes come first, so the marker names the most
 * specific kind (`api_key=[REDACTED:openai-key]`, not `[REDACTED:api-key]`).
 */
export const defaultRedactionRules: RedactionRules = deepFreeze({
  rules: [
    {
      id: 'private-key',
      pattern: String.raw`-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----(?:(?:(?!-----BEGIN)[\s\S]){0,16384}?-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|(?:(?:\r?\n|\\r?\\n)[ \t]*(?:[A-Za-z0-9+/=]{1,200}|(?:Proc-Type|DEK-Info|Comment):[^\r\n\\]{0,200})?(?=\r?\n|\\[rn]|"|$))*)`,
    },
    { id: 'url-password', pattern: String.raw`://(?<=(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://)[^\s:/?#@'"]*:(?<secret>[^\s@/?#'"]+)@` },
    { id: 'jwt', pattern: String.raw`(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}` },
    { id: 'anthropic-key', pattern: String.raw`(?<![A-Za-z0-9_-])sk-ant-[a-z]{2,10}[0-9]{0,3}-[A-Za-z0-9_-]{20,}` },
    { id: 'openai-key', pattern: String.raw`(?<![A-Za-z0-9_-])sk-(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}` },
    { id: 'aws-access-key-id', pattern: String.raw`(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])` },
    {
      id: 'aws-secret-key',
      pattern: String.raw`(?:aws[_-]?)?secret[_-]?(?:access[_-]?)?key\\?["']?[ \t]*(?::=|=>|=|:)[ \t]*\\?["']?(?<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])`,
      flags: 'i',
    },
    { id: 'github-token', pattern: String.raw`(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})` },
    { id: 'gitlab-token', pattern: String.raw`(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}` },
    { id: 'slack-token', pattern: String.raw`(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}` },
    { id: 'slack-webhook', pattern: String.raw`hooks\.slack\.com/services/(?<secret>T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,})` },
    { id: 'google-api-key', pattern: String.raw`(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])` },
    { id: 'stripe-key', pattern: String.raw`(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}` },
    { id: 'azure-key', pattern: String.raw`(?:key|subscription|azure)[^\n]{0,60}?(?<![0-9A-Fa-f-])(?<secret>[0-9a-fA-F]{32})(?![0-9A-Fa-f-])`, flags: 'i' },
    { id: 'huggingface-token', pattern: String.raw`(?<![A-Za-z0-9_])hf_[A-Za-z]{34}(?![A-Za-z0-9_])` },
    { id: 'npm-token', pattern: String.raw`(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])` },
    { id: 'groq-key', pattern: String.raw`(?<![A-Za-z0-9_])gsk_[A-Za-z0-9]{48,56}(?![A-Za-z0-9_])` },
    { id: 'sendgrid-key', pattern: String.raw`(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])` },
    {
      id: 'authorization',
      pattern: String.raw`(?<![A-Za-z0-9_-])(?:Proxy-)?Authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(?:Bearer|Basic|Token|Bot)[ \t]+|(?=[A-Za-z._~-]*[0-9+/=]))(?![a-z]+\b)(?<secret>[A-Za-z0-9._~+/-]{8,}=*)(?![A-Za-z0-9._~+/=(-])`,
      flags: 'i',
    },
    { id: 'bearer-token', pattern: String.raw`\bBearer[ \t]+(?![a-z]+\b)(?<secret>[A-Za-z0-9._~+/-]{16,}=*)`, flags: 'i' },
    { id: 'password', key: String.raw`pass(?:word|wd|phrase)` },
    { id: 'secret', key: String.raw`secret(?:[_-]?key)?` },
    { id: 'token', key: String.raw`token` },
    { id: 'api-key', key: String.raw`api[_-]?key` },
    { id: 'access-key', key: String.raw`access[_-]?key` },
    { id: 'private-key', key: String.raw`private[_-]?key` },
  ],
  entropy: { enabled: true, minLength: 24, threshold: 0.8, maxWordShare: 0.6 },
  allowlist: [
    // References to a secret, not the secret: $VAR, ${VAR}, {{ var }}, %(var)s, %s, <your-key>
    String.raw`^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$`,
    String.raw`^\{\{.*\}\}$`,
    String.raw`^%\([A-Za-z_][A-Za-z0-9_]*\)s$`,
    String.raw`^%[-+ #0-9.]*[sdrifxX]$`,
    String.raw`^<[^<>]*>$`,
    // No secret at all, or a type annotation: token=None, password: str
    String.raw`^(?:None|null|NULL|nil|undefined|true|false|True|False|~|str|string|String|bytes|int|number|bool|boolean|any|unknown|object|SecretStr|Optional\[str\])[,;]?$`,
    // Masked already, or an elided example: ***, sk-...
    String.raw`^(?:\*+|x{3,}|X{3,}|REDACTED|redacted)$`,
    String.raw`^[A-Za-z0-9_-]{0,12}(?:\.{3}|…)$`,
    // Special tokens of tokenizers: pad_token="[PAD]"
    String.raw`^\[[A-Z]+\]$`,
    // Base64 of known file formats (PNG, JPEG, GIF, PDF, gzip, zip) and Subresource Integrity hashes: data, not keys
    String.raw`^(?:iVBORw0KGgo|/9j/|R0lGOD|JVBERi0|H4sI|UEsDB)`,
    String.raw`^sha(?:1|256|384|512)-`,
    // Ids of model providers' objects and requests (ft-..., file-..., req_..., chatcmpl-...): random, but not secret, and what a bug report needs
    String.raw`^(?:chatcmpl|cmpl|ft|ftjob|ftckpt|file|batch|run|msg|msgbatch|req|resp|asst|thread|call|toolu|vs|step)[-_][A-Za-z0-9]{8,}$`,
    // URNs: X509_SUBJECT_TOKEN = 'urn:...:token-type:x509'
    String.raw`^urn:[A-Za-z0-9:._-]+$`,
  ],
});

const ruleIdPattern = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

const entropySchema = z.strictObject({
  enabled: z.boolean().default(defaultRedactionRules.entropy.enabled),
  minLength: z.number().int().min(8).max(1_000).default(defaultRedactionRules.entropy.minLength),
  threshold: z.number().min(0).max(1).default(defaultRedactionRules.entropy.threshold),
  maxWordShare: z.number().min(0).max(1).default(defaultRedactionRules.entropy.maxWordShare),
});

const ruleSchema = z
  .strictObject({
    id: z
      .string()
      .regex(ruleIdPattern, 'must be kebab-case, e.g. openai-key')
      .refine((id) => id !== HIGH_ENTROPY_RULE, `is the entropy check's own id`),
    pattern: z.string().min(1).optional(),
    flags: z
      .string()
      .regex(/^[imsu]*$/, 'may only hold the flags i, m, s and u')
      .optional(),
    key: z.string().min(1).optional(),
  })
  .superRefine((rule, context) => {
    if ((rule.pattern === undefined) === (rule.key === undefined)) {
      context.addIssue({ code: 'custom', message: 'a rule needs exactly one of pattern (the secret) and key (the name a secret is assigned to)' });
      return;
    }
    if (rule.key !== undefined && rule.flags !== undefined) context.addIssue({ code: 'custom', path: ['flags'], message: 'only applies to pattern; key is matched case-insensitively' });
    const source = rule.pattern ?? rule.key ?? '';
    const field = rule.pattern === undefined ? 'key' : 'pattern';
    // A key is checked as it is used: inside the assignment expression.
    const problem = regexProblem(source, rule.flags ?? '') ?? (rule.key === undefined ? undefined : regexProblem(assignmentSource(rule.key), 'dim'));
    if (problem) context.addIssue({ code: 'custom', path: [field], message: problem });
    else if (new RegExp(`^(?:${source})$`, rule.flags ?? '').test('')) context.addIssue({ code: 'custom', path: [field], message: 'matches the empty string' });
  });

const rulesSchema = z.strictObject({
  rules: z
    .array(ruleSchema)
    .default(() => structuredClone(defaultRedactionRules.rules) as RedactionRule[])
    .superRefine((rules, context) => {
      const seen = new Map<string, number>();
      rules.forEach((rule, index) => {
        // A pattern rule and a key rule may share an id (private-key: a PEM block, or `private_key = "..."`).
        const kind = `${rule.pattern === undefined ? 'key' : 'pattern'}:${rule.id}`;
        if (seen.has(kind)) context.addIssue({ code: 'custom', path: [index, 'id'], message: `${rule.id} is used by rule ${seen.get(kind)} of the same kind; ids must be unique` });
        seen.set(kind, index);
      });
    }),
  entropy: entropySchema.default(() => ({ ...defaultRedactionRules.entropy })),
  allowlist: z
    .array(
      z.string().superRefine((source, context) => {
        const problem = regexProblem(source, '');
        if (problem) context.addIssue({ code: 'custom', message: problem });
      }),
    )
    .default(() => [...defaultRedactionRules.allowlist]),
});

function regexProblem(source: string, flags: string): string | undefined {
  try {
    new RegExp(source, flags);
    return undefined;
  } catch (error) {
    return `is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * Reads `redaction.yaml` from `configDir` (default: `RATCHET_CONFIG_DIR`, else
 * `config/` under the working directory). Without the file, or for keys it
 * leaves out (`rules`, `entropy`, `allowlist`), the built-in defaults apply.
 *
 * @throws AppError CONFIG_INVALID naming the file and every bad key (with the
 *   YAML line for syntax errors): unknown keys, a rule with both or neither of
 *   `pattern` and `key`, a regular expression that does not compile or
 *   matches the empty string, duplicate ids, thresholds out of range.
 */
export function loadRedactionRules(configDir = process.env['RATCHET_CONFIG_DIR'] || path.resolve('config')): RedactionRules {
  const file = path.join(configDir, 'redaction.yaml');
  if (!existsSync(file)) return defaultRedactionRules;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const document = parseDocument(text, { prettyErrors: true });
  if (document.errors.length > 0) {
    const problems = document.errors.map((error) => {
      const line = error.linePos?.[0];
      return `${line ? `line ${line.line}:${line.col}: ` : ''}YAML syntax error: ${error.message.split('\n')[0]}`;
    });
    throw new AppError(ErrorCode.CONFIG_INVALID, `${file} is invalid: ${problems.join('; ')}`);
  }
  const result = rulesSchema.safeParse(document.toJS() ?? {});
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`);
    throw new AppError(ErrorCode.CONFIG_INVALID, `${file} is invalid: ${problems.join('; ')}; see the comments in config/redaction.yaml for each key`);
  }
  return deepFreeze(result.data);
}

interface CompiledRule {
  readonly id: string;
  readonly regex: RegExp;
  readonly kind: 'pattern' | 'key';
}

interface Span {
  readonly start: number;
  readonly end: number;
}

const markerPattern = /\[REDACTED:[a-z0-9-]+\]/g;
const markerOf = (rule: string) => `[REDACTED:${rule}]`;

/**
 * A redactor for `rules` (default: the built-in rules). Compiling the rules
 * takes 5 to 10 ms, so callers make one and keep it. Redaction takes time
 * linear in the text's length: about 20 µs per KB of code, logs and test
 * output (under 0.1 ms for a 1 KB lesson), at most about 150 µs per KB for
 * the hardest input (see bench/redact.mts).
 *
 * @throws AppError CONFIG_INVALID when a rule's regular expression does not
 *   compile (rules from loadRedactionRules are already checked).
 */
export function createRedactor(rules: RedactionRules = defaultRedactionRules, options: RedactorOptions = {}): Redactor {
  const compiled = rules.rules.map(compileRule);
  // Longest first, so a secret that contains another is replaced whole.
  const values = [...new Set((options.values ?? []).filter((value) => value.length >= minSecretChars))].sort((left, right) => right.length - left.length);
  const byValue = values.length === 0 ? undefined : new RegExp(values.map((value) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'gd');
  const allowlist = rules.allowlist.map((source) => compile(source, '', 'allowlist'));
  const entropy = rules.entropy;
  const allowed = (value: string) => allowlist.some((pattern) => pattern.test(value));

  return {
    redact(input: string): RedactionResult {
      let text = input;
      // By id, in the order first found; a pattern rule and a key rule may share one.
      const counts = new Map<string, number>();
      const apply = (id: string, spans: Span[]) => {
        const kept = keepNew(text, spans).filter((span) => !allowed(text.slice(span.start, span.end)));
        if (kept.length === 0) return;
        text = replaceSpans(text, kept, markerOf(id));
        counts.set(id, (counts.get(id) ?? 0) + kept.length);
      };
      if (byValue !== undefined) apply(CONFIGURED_SECRET_RULE, patternSpans(text, byValue));
      for (const rule of compiled) apply(rule.id, rule.kind === 'pattern' ? patternSpans(text, rule.regex) : assignmentSpans(text, rule.regex));
      if (entropy.enabled) apply(HIGH_ENTROPY_RULE, highEntropySpans(text, entropy));
      return { text, found: [...counts].map(([rule, count]) => ({ rule, count })) };
    },
  };
}

/** Names of settings that hold a secret: API keys, tokens, passwords, secrets. */
const secretSetting = /(api[-_]?key|token|tokens|password|secret)$/i;
/** Names of variables that do (`RATCHET_NATS_PASSWORD_CODER` too). */
const secretVariable = /^RATCHET_\w*(API_?KEY|TOKENS?|PASSWORD|SECRET)/;

/**
 * The secrets a process was configured with, to redact by value: string
 * settings of `config` whose key names a secret (apiKey, token(s),
 * password, secret), and `RATCHET_*` variables of `env` named so (not
 * `*_FILE`, which name files). Comma-separated token lists are split;
 * whole numbers (token counts) are not secrets.
 */
export function configuredSecrets(config: unknown, env: NodeJS.ProcessEnv = process.env): string[] {
  const found: string[] = [];
  const add = (value: unknown, list: boolean) => {
    if (typeof value !== 'string') return;
    // A count (max_tokens) is not a secret, whatever its name.
    found.push(...(list ? value.split(',') : [value]).map((part) => part.trim()).filter((part) => part !== '' && !/^\d+$/.test(part)));
  };
  const seen = new Set<unknown>();
  const walk = (value: unknown) => {
    if (typeof value !== 'object' || value === null || seen.has(value)) return;
    seen.add(value);
    for (const [key, child] of Object.entries(value)) {
      if (secretSetting.test(key)) add(child, /tokens$/i.test(key));
      walk(child);
    }
  };
  walk(config);
  for (const [name, value] of Object.entries(env)) if (secretVariable.test(name) && !name.endsWith('_FILE')) add(value, /TOKENS/.test(name));
  return [...new Set(found)];
}

/**
 * Keys whose strings are left as they are by `redactStrings`: file contents
 * (the code itself, which redacting would break), ids, and a command a person
 * is asked to approve (it must run as shown).
 */
const verbatimKey = /^(content|id|[a-zA-Z]+Ids?|commandLine)$/;

/**
 * A copy of `value` with `redact` applied to every string in it, at any
 * depth, except under keys that hold code, ids or a command to approve
 * (`content`, `id`, `*Id`, `*Ids`, `commandLine`). Dates and byte arrays
 * are kept as they are.
 */
export function redactStrings<T>(value: T, redact: (text: string) => string): T {
  const walk = (item: unknown, key: string): unknown => {
    if (typeof item === 'string') return verbatimKey.test(key) ? item : redact(item);
    if (typeof item !== 'object' || item === null || item instanceof Date || ArrayBuffer.isView(item)) return item;
    if (Array.isArray(item)) return item.map((element) => walk(element, key));
    return Object.fromEntries(Object.entries(item).map(([name, child]) => [name, verbatimKey.test(name) && typeof child !== 'string' ? child : walk(child, name)]));
  };
  return walk(value, '') as T;
}

let defaultRedactor: Redactor | undefined;

/** `text` with secrets replaced, by the built-in rules; for callers without a config directory. */
export function redactText(text: string): string {
  defaultRedactor ??= createRedactor();
  return defaultRedactor.redact(text).text;
}

function compile(source: string, flags: string, what: string): RegExp {
  try {
    return new RegExp(source, flags);
  } catch (error) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `redaction ${what} /${source}/ is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

function compileRule(rule: RedactionRule): CompiledRule {
  if (rule.pattern !== undefined) return { id: rule.id, kind: 'pattern', regex: compile(rule.pattern, `gd${rule.flags ?? ''}`, `rule ${rule.id}`) };
  if (rule.key === undefined) throw new AppError(ErrorCode.CONFIG_INVALID, `redaction rule ${rule.id} needs a pattern or a key`);
  return { id: rule.id, kind: 'key', regex: compile(assignmentSource(rule.key), 'gdim', `rule ${rule.id}`) };
}

/**
 * The places a value is assigned to a key that ends in `key`: the key may
 * carry a prefix (`DB_PASSWORD`, `client_secret`, `apiKey`, `X-Api-Key`,
 * `--password`) but nothing after it (`password_hash`, `max_tokens` are other
 * things). The expression starts at the keyword, which keeps the search fast;
 * `assignmentSpans` finds the prefix. Three shapes, tried in order:
 * - `quoted`: a quoted value after `=`, `:`, `:=` or `=>` (code, JSON, YAML, TOML);
 * - `bare`: `key=value` without spaces (env files, logfmt, URL queries,
 *   `--password=`), the value ending at a space, quote, `&`, `;` or `#` so that
 *   keyword arguments (`f(password=password)`) are left alone;
 * - `line`: `key: value` or `key = value` holding the whole line (YAML, INI,
 *   HTTP headers); checked further in `assignmentSpans`.
 */
function assignmentSource(key: string): string {
  return [
    String.raw`(?<keyword>${key})(?![A-Za-z0-9_])`,
    '(?:',
    String.raw`\\?["'${'`'}]?[ \t]*(?::=|=>|=|:)[ \t]*(?:[bru]{1,2})?\\?(?<quote>["'${'`'}])(?<quoted>[^\s"'${'`'}\\]{3,})\\?\k<quote>`,
    String.raw`|=(?<bare>[^\s"'${'`'}<>(){}\[\],;&|]+)(?=[\s"'&;#]|$)`,
    String.raw`|\\?["']?[ \t]*(?<separator>[:=])[ \t]+(?<line>[^\s"'${'`'}]+)[ \t]*(?:#.*)?$`,
    ')',
  ].join('');
}

function patternSpans(text: string, regex: RegExp): Span[] {
  const spans: Span[] = [];
  regex.lastIndex = 0;
  for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
    if (match[0] === '') {
      regex.lastIndex += 1;
      continue;
    }
    const [start, end] = match.indices?.groups?.['secret'] ?? match.indices?.[0] ?? [match.index, match.index + match[0].length];
    if (end > start) spans.push({ start, end });
  }
  return spans;
}

function assignmentSpans(text: string, regex: RegExp): Span[] {
  const spans: Span[] = [];
  regex.lastIndex = 0;
  for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
    const groups = match.groups ?? {};
    const indices = match.indices?.groups ?? {};
    const keyStart = prefixStart(text, match.index);
    const key = text.slice(keyStart, indices['keyword']?.[1] ?? match.index);
    const valueGroup = groups['quoted'] !== undefined ? 'quoted' : groups['bare'] !== undefined ? 'bare' : 'line';
    const value = groups[valueGroup] ?? '';
    const range = indices[valueGroup];
    if (range === undefined || value === '') continue;
    if (sameName(key, value)) continue;
    if (value.includes('${')) continue; // a template literal's interpolation: code, not a value
    if (valueGroup === 'line') {
      if (!atLineStart(text, keyStart)) continue;
      if (looksLikeCode(value, groups['separator'] === '=')) continue;
    }
    if (valueGroup !== 'quoted' && /^(?:~|\.{1,2})?\/[\w.@+/-]*$/.test(value)) continue; // a file path: `private_key: ~/.ssh/id_rsa`
    spans.push({ start: range[0], end: range[1] });
  }
  return spans;
}

/** Where the key holding the keyword at `index` starts: at `DB_` in `DB_PASSWORD`, at `--` in `--password`. */
function prefixStart(text: string, index: number): number {
  let start = index;
  while (start > 0 && isKeyCharacter(text.charCodeAt(start - 1))) start -= 1;
  return start;
}

/** A-Z, a-z, 0-9, `_`, `.` and `-`. */
function isKeyCharacter(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || (code >= 48 && code <= 57) || code === 95 || code === 46 || code === 45;
}

/** `password=password`, `token: token,`: a variable passed on, not a value. */
function sameName(key: string, value: string): boolean {
  const bare = value.replace(/[,;]$/, '').toLowerCase();
  const name = key.toLowerCase();
  return bare === name || name.endsWith(`.${bare}`) || name.endsWith(`-${bare}`);
}

function atLineStart(text: string, index: number): boolean {
  // Looks back at most `maxIndent` characters: what may stand before the key is short, and
  // walking back over a long line for every key on it would make redaction quadratic.
  const maxIndent = 256;
  let lineStart = index;
  while (lineStart > 0 && index - lineStart <= maxIndent && text[lineStart - 1] !== '\n' && text[lineStart - 1] !== '\r') lineStart -= 1;
  if (lineStart > 0 && text[lineStart - 1] !== '\n' && text[lineStart - 1] !== '\r') return false;
  return /^[ \t]*(?:-[ \t]+)?(?:export[ \t]+)?$/.test(text.slice(lineStart, index));
}

/**
 * A whole-line `key: value` or `key = value` is also how TypeScript and
 * Python declare and assign: `password: z.string(),`, `token: accessToken,`,
 * `secret = settings.secret`. Those values are expressions, not secrets.
 */
function looksLikeCode(value: string, equals: boolean): boolean {
  if (/[(){}[\]]|=>/.test(value)) return true;
  const bare = value.replace(/[,;]$/, '');
  if (/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(bare)) return true;
  if (bare !== value && /^[A-Za-z_$][\w$]*$/.test(bare)) return true;
  // INI files write `password = hunter2`; Python writes `password = raw_password` and `ERRORTOKEN = 60`.
  // A name without digits is taken for a variable, a number for a constant.
  return equals && /^(?:[A-Za-z_$][A-Za-z_$]*|\d+)$/.test(bare);
}

/** Spans that do not touch a marker already in the text, so redacting twice changes nothing. */
function keepNew(text: string, spans: Span[]): Span[] {
  if (spans.length === 0 || !text.includes('[REDACTED:')) return spans;
  const markers = [...text.matchAll(markerPattern)].map((match) => ({ start: match.index, end: match.index + match[0].length }));
  return spans.filter((span) => !markers.some((marker) => span.start < marker.end && marker.start < span.end));
}

function replaceSpans(text: string, spans: readonly Span[], marker: string): string {
  const parts: string[] = [];
  let position = 0;
  for (const span of [...spans].sort((left, right) => left.start - right.start)) {
    if (span.start < position) continue;
    parts.push(text.slice(position, span.start), marker);
    position = span.end;
  }
  parts.push(text.slice(position));
  return parts.join('');
}

// Runs of the base64 and base64url alphabets; `=` only as padding, so `KEY=value` gives two tokens.
const tokenPattern = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]+={0,2}(?![A-Za-z0-9+/_-])/g;

function highEntropySpans(text: string, settings: EntropySettings): Span[] {
  const spans: Span[] = [];
  for (const match of text.matchAll(tokenPattern)) {
    const token = match[0];
    if (token.length < settings.minLength || !isRandom(token, settings)) continue;
    const segments = token.split('/');
    // A path or URL with a random part (`/api/v1/files/<id>`): only that part goes. A random
    // blob is not a path because it has a slash: a path starts like one and has a word in it.
    const pathLike = segments.length > 1 && /^(?:~|[a-z][a-z0-9_-]*)?$/.test(segments[0] ?? '') && segments.some((segment) => /^[a-z][a-z0-9_-]{2,}$/.test(segment) && /[aeiouy]/.test(segment));
    if (pathLike) {
      let offset = match.index;
      for (const segment of segments) {
        if (segment.length >= settings.minLength && isRandom(segment, settings)) spans.push({ start: offset, end: offset + segment.length });
        offset += segment.length + 1;
      }
      continue;
    }
    spans.push({ start: match.index, end: match.index + token.length });
  }
  return spans;
}

/**
 * A token reads as random when it mixes lower case, upper case and digits
 * (hex digests, UUIDs and SHAs have no upper case, constants no lower case),
 * its entropy is near the most its length allows, few of its characters are
 * in word-like runs (identifiers and paths are made of words), and it is not
 * base64 of text.
 */
function isRandom(token: string, settings: EntropySettings): boolean {
  const body = token.replace(/=+$/, '');
  if (body.length < settings.minLength) return false;
  if (!/[a-z]/.test(body) || !/[A-Z]/.test(body) || !/[0-9]/.test(body)) return false;
  if (shannonEntropy(body) < settings.threshold * Math.log2(Math.min(body.length, 64))) return false;
  if (wordShare(body) >= settings.maxWordShare) return false;
  return !decodesToText(body);
}

function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const character of text) counts.set(character, (counts.get(character) ?? 0) + 1);
  let entropy = 0;
  for (const count of counts.values()) {
    const share = count / text.length;
    entropy -= share * Math.log2(share);
  }
  return entropy;
}

/**
 * Share of characters that read as words: runs like `Server`, `test`, `HTTP`
 * holding a vowel, and between `_`, `-` and `.` whole words and numbers with
 * the separators (`Add_missing_parameter_to_0_95188`). Random base64 has few.
 */
function wordShare(token: string): number {
  const segments = token.split(/[_.-]/);
  let inWords = segments.length - 1;
  for (const segment of segments) {
    if (/^[0-9]+$/.test(segment) || (/^(?:[a-z]{2,}|[A-Z][a-z]+|[A-Z]{2,4})$/.test(segment) && /[aeiouy]/i.test(segment))) {
      inWords += segment.length;
      continue;
    }
    for (const match of segment.matchAll(/[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])/g)) {
      if (match[0].length >= 3 && /[aeiouy]/i.test(match[0])) inWords += match[0].length;
    }
  }
  return inWords / token.length;
}

/** Base64 of text (`SGVsbG8sIHdvcmxk`) is data someone encoded, not a key. */
function decodesToText(token: string): boolean {
  const bytes = Buffer.from(token.replaceAll('-', '+').replaceAll('_', '/'), 'base64');
  if (bytes.length === 0) return false;
  let printable = 0;
  for (const byte of bytes) if ((byte >= 0x20 && byte < 0x7f) || byte === 0x09 || byte === 0x0a || byte === 0x0d) printable += 1;
  return printable / bytes.length >= 0.95;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
