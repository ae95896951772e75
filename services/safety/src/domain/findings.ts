/**
 * Stable ids of the built-in (tree-sitter) rules. Findings, lessons, the
 * `code.rules` of config/safety.yaml and docs refer to them, so an id never
 * changes meaning; a new behaviour gets a new id. Language-specific rules are
 * namespaced (`py.`, `js.`) like the contract's examples. Findings of the
 * other scanners carry `bandit.<test id>` and `eslint.security/<rule>`.
 *
 * Retired: `js.child-process` (any load of child_process), replaced by
 * `js.shell-command`, `js.shell-literal`, `js.process-spawn` and
 * `js.process-internals`, which judge what a call runs instead.
 */
export const RuleId = {
  /** A file path in the request is absolute, climbs out with `..`, or is otherwise not a clean workspace path. */
  PATH_OUTSIDE_WORKSPACE: 'path-outside-workspace',
  /** A file-writing call whose literal path is absolute, home-relative or climbs out of the workspace (the scratch directory /tmp is fine). */
  WRITE_OUTSIDE_WORKSPACE: 'write-outside-workspace',
  /** A file that does not parse; reported at its first error. */
  PARSE_ERROR: 'parse-error',
  /** More findings than the response carries; the verdict still counts them all. */
  FINDINGS_TRUNCATED: 'findings-truncated',
  /** A scanner (Bandit, ESLint) did not run on some files, and why; the other scanners still did. */
  SCANNER_SKIPPED: 'scanner-skipped',
  /** Python `eval`/`exec`/`compile` of a string that comes from outside the code: a parameter, input, a global or an expression. */
  PYTHON_DYNAMIC_EVAL: 'py.dynamic-eval',
  /** Python `eval`/`exec` of a string the function builds itself from its own values (an arithmetic expression, say). */
  PYTHON_EVAL_BUILT_STRING: 'py.eval-built-string',
  /** Python `os.system`, `os.popen`, `os.exec*`, `os.spawn*`, `pty.spawn` and friends. */
  PYTHON_OS_COMMAND: 'py.os-command',
  /** Python `subprocess.*` with `shell=True`, helpers that always use a shell, or a shell's `-c` with a string built at run time. */
  PYTHON_SUBPROCESS_SHELL: 'py.subprocess-shell',
  /** Python MD5 or SHA-1 (hashlib, Crypto.Hash) in a security role: passwords, tokens, signatures. */
  PYTHON_WEAK_HASH_SECURITY: 'py.weak-hash-security',
  /** Python MD5 or SHA-1 elsewhere (checksums, cache keys), without `usedforsecurity=False`. */
  PYTHON_WEAK_HASH: 'py.weak-hash',
  /** Python DES, 3DES, RC2, RC4, Blowfish, CAST, IDEA, SEED or XOR ciphers. */
  PYTHON_WEAK_CIPHER: 'py.weak-cipher',
  /** Python ECB cipher mode, which leaks patterns of the plaintext. */
  PYTHON_WEAK_CIPHER_MODE: 'py.weak-cipher-mode',
  /** Python RSA or DSA keys shorter than 2048 bits, EC keys on curves under 224 bits. */
  PYTHON_WEAK_KEY: 'py.weak-key',
  /** Python TLS without certificate or host name verification (verify=False, CERT_NONE, unverified contexts). */
  PYTHON_TLS_NO_VERIFY: 'py.tls-no-verify',
  /** Python SSLv2, SSLv3, TLS 1.0 or TLS 1.1. */
  PYTHON_TLS_OLD_PROTOCOL: 'py.tls-old-protocol',
  /** Python XML parsers that resolve entities on request (lxml resolve_entities=True, SAX external entities). */
  PYTHON_XML_ENTITIES: 'py.xml-entities',
  /** Python standard-library or lxml XML parsing, open to entity expansion ("billion laughs") on untrusted input. */
  PYTHON_XML_UNSAFE_PARSER: 'py.xml-unsafe-parser',
  /** Python pickle, marshal, shelve, dill, jsonpickle, yaml.load without a safe loader, pandas.read_pickle, numpy.load(allow_pickle=True). */
  PYTHON_UNSAFE_DESERIALIZATION: 'py.unsafe-deserialization',
  /** Python jinja2 `Environment` with autoescape off (the default). */
  PYTHON_JINJA2_AUTOESCAPE_OFF: 'py.jinja2-autoescape-off',
  /** Python Flask `app.run(debug=True)`, which serves the Werkzeug debugger (run code from the browser). */
  PYTHON_FLASK_DEBUG: 'py.flask-debug',
  /** Python paramiko `AutoAddPolicy`/`WarningPolicy`: SSH without host key checks. */
  PYTHON_SSH_NO_HOST_KEY_CHECK: 'py.ssh-no-host-key-check',
  /** Python `tempfile.mktemp`, `os.tempnam`, `os.tmpnam`: a name another process can take first. */
  PYTHON_INSECURE_TEMPFILE: 'py.insecure-tempfile',
  /** Python passwords, secrets and tokens written in the code. */
  PYTHON_HARDCODED_PASSWORD: 'py.hardcoded-password',
  /** Python SQL built by string formatting (f-strings, %, .format, +) and passed to execute(). */
  PYTHON_SQL_STRING_FORMAT: 'py.sql-string-format',
  /** Python servers bound to every interface (0.0.0.0, ::). */
  PYTHON_BIND_ALL_INTERFACES: 'py.bind-all-interfaces',
  /** Python telnet (telnetlib) or plain FTP (ftplib.FTP): credentials and data in clear text. */
  PYTHON_CLEARTEXT_PROTOCOL: 'py.cleartext-protocol',
  /** `tarfile` `extractall()` without a `filter` or chosen `members`: member names can write anywhere (../, absolute paths, links). */
  PYTHON_TAR_EXTRACT_ALL: 'py.tar-extract-all',
  /** Python imports of pyCrypto's `Crypto` package, unmaintained since 2013. */
  PYTHON_DEPRECATED_CRYPTO: 'py.deprecated-crypto',
  /** Python chmod to a world-writable mode. */
  PYTHON_PERMISSIVE_FILE_MODE: 'py.permissive-file-mode',
  /** JavaScript/TypeScript `eval` of a string that is not a plain literal. */
  JS_DYNAMIC_EVAL: 'js.dynamic-eval',
  /** JavaScript/TypeScript `new Function(...)` or `Function(...)`. */
  JS_FUNCTION_CONSTRUCTOR: 'js.function-constructor',
  /** JavaScript/TypeScript `vm.runIn*`, `vm.compileFunction`, `new vm.Script`. */
  JS_VM: 'js.vm',
  /** JavaScript/TypeScript child_process running a shell on a command built at run time: exec/execSync, `shell: true`, `sh -c`. */
  JS_SHELL_COMMAND: 'js.shell-command',
  /** JavaScript/TypeScript child_process running a shell on a fixed command string. */
  JS_SHELL_LITERAL: 'js.shell-literal',
  /** JavaScript/TypeScript execFile/spawn/fork of a program only known at run time (no shell). */
  JS_PROCESS_SPAWN: 'js.process-spawn',
  /** JavaScript/TypeScript `process.binding` of the internals that spawn processes. */
  JS_PROCESS_INTERNALS: 'js.process-internals',
  /** JavaScript/TypeScript TLS without certificate checks (rejectUnauthorized: false, NODE_TLS_REJECT_UNAUTHORIZED=0). */
  JS_TLS_NO_VERIFY: 'js.tls-no-verify',
  /** JavaScript/TypeScript DES, 3DES, RC2, RC4, Blowfish, CAST, IDEA or ECB ciphers, and the IV-less createCipher. */
  JS_WEAK_CIPHER: 'js.weak-cipher',
  /** JavaScript/TypeScript MD5 or SHA-1 in a security role (passwords, tokens, signatures). */
  JS_WEAK_HASH_SECURITY: 'js.weak-hash-security',
  /** JavaScript/TypeScript MD5 or SHA-1 elsewhere (checksums, cache keys). */
  JS_WEAK_HASH: 'js.weak-hash',
  /** JavaScript/TypeScript RSA or DSA keys shorter than 2048 bits. */
  JS_WEAK_KEY: 'js.weak-key',
  /** JavaScript/TypeScript SQL built by templates or concatenation and passed to query()/execute(). */
  JS_SQL_STRING_FORMAT: 'js.sql-string-format',
} as const;
export type RuleId = (typeof RuleId)[keyof typeof RuleId];

/** How bad a finding is; the domain's twin of the proto `Severity`. */
export const Severity = { INFO: 'info', LOW: 'low', MEDIUM: 'medium', HIGH: 'high', CRITICAL: 'critical' } as const;
export type Severity = (typeof Severity)[keyof typeof Severity];

/** How sure a rule is that a match is real; the domain's twin of the proto `Confidence`. */
export const Confidence = { LOW: 'low', MEDIUM: 'medium', HIGH: 'high' } as const;
export type Confidence = (typeof Confidence)[keyof typeof Confidence];

/** What produced a finding; the contract's `tool` strings. */
export const Tool = { RATCHET: 'ratchet', BANDIT: 'bandit', ESLINT: 'eslint-plugin-security' } as const;
export type Tool = (typeof Tool)[keyof typeof Tool];

/**
 * The decision of a check, and the action the policy gave one finding
 * (ALLOW: listed, changes nothing); the domain's twin of the proto
 * `SafetyVerdict`.
 */
export const Verdict = { ALLOW: 'allow', WARN: 'warn', BLOCK: 'block' } as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** What a scanner found, before the policy decided what it means (see `Finding`). */
export interface Detection {
  /** A {@link RuleId}, `bandit.<test id>` (bandit.B602) or `eslint.security/<rule>`. */
  readonly ruleId: string;
  readonly severity: Severity;
  /** Workspace-relative path of the file, as the request spelled it; empty for findings about the whole check. */
  readonly path: string;
  /** 1-based; 0 when the finding is about the file as a whole. */
  readonly line: number;
  /** 1-based, in UTF-16 code units (what editors show); 0 when unknown or about the file as a whole. */
  readonly column: number;
  /** What is wrong and why it matters. */
  readonly message: string;
  /** The source line, trimmed and capped at {@link maxSnippetLength} characters. */
  readonly snippet: string;
  /** What to do instead. */
  readonly remediation: string;
  /** The weakness, "CWE-78"; empty when none applies. */
  readonly cwe: string;
  readonly confidence: Confidence;
  readonly tool: Tool;
}

/** One finding in one file, with the action the policy gave it (see code-policy.ts). */
export interface Finding extends Detection {
  readonly action: Verdict;
  /** The code before the change has it too (see change-baseline.ts): listed, never counted toward the verdict. */
  readonly preExisting?: boolean;
}

/** The outcome of checking a set of files. */
export interface Analysis {
  /** The most severe action among all findings, the ones left out of `findings` included. */
  readonly verdict: Verdict;
  readonly findings: readonly Finding[];
}

/** Longest snippet carried by a finding, characters. */
export const maxSnippetLength = 200;

/** What a built-in rule reports besides its message. */
export interface RuleText {
  readonly severity: Severity;
  readonly confidence: Confidence;
  /** "CWE-<n>", or empty. */
  readonly cwe: string;
  readonly remediation: string;
}

const { INFO, LOW, MEDIUM, HIGH, CRITICAL } = Severity;
const sure = Confidence.HIGH;
const likely = Confidence.MEDIUM;

/** Severity, confidence, CWE and remedy of every built-in rule. */
export const ruleTexts: Readonly<Record<RuleId, RuleText>> = {
  [RuleId.PATH_OUTSIDE_WORKSPACE]: { severity: CRITICAL, confidence: sure, cwe: 'CWE-22', remediation: 'Use a relative path inside the workspace with "/" separators and no "." or ".." segments, e.g. src/app.py.' },
  [RuleId.WRITE_OUTSIDE_WORKSPACE]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-22',
    remediation: 'Write only to relative paths inside the workspace, or to /tmp or a temporary directory obtained at run time (tempfile.mkdtemp(), fs.mkdtemp(path.join(os.tmpdir(), ...))).',
  },
  [RuleId.PARSE_ERROR]: { severity: LOW, confidence: sure, cwe: '', remediation: 'Fix the syntax error at this line; the tests cannot run until the file parses.' },
  [RuleId.FINDINGS_TRUNCATED]: { severity: INFO, confidence: sure, cwe: '', remediation: 'Fix the findings listed first; the rest appear once these are gone.' },
  [RuleId.SCANNER_SKIPPED]: { severity: INFO, confidence: sure, cwe: '', remediation: 'Nothing to change in the code; the message says what the operator can fix.' },
  [RuleId.PYTHON_DYNAMIC_EVAL]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-95',
    remediation: 'Do not evaluate code built at run time: parse data with json.loads or ast.literal_eval, or dispatch through a dict of functions.',
  },
  [RuleId.PYTHON_EVAL_BUILT_STRING]: {
    severity: MEDIUM,
    confidence: Confidence.LOW,
    cwe: 'CWE-95',
    remediation: 'Compute the value directly (a loop over operator functions from the operator module) instead of building source text and evaluating it.',
  },
  [RuleId.PYTHON_OS_COMMAND]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-78',
    remediation: 'Do not run shell commands or replace the process; do the job with the standard library (pathlib, shutil, json) or call subprocess.run with a list of arguments and no shell.',
  },
  [RuleId.PYTHON_SUBPROCESS_SHELL]: { severity: HIGH, confidence: sure, cwe: 'CWE-78', remediation: 'Drop the shell: pass the program and its arguments as a list, e.g. subprocess.run(["ls", "-l", path], check=True).' },
  [RuleId.PYTHON_WEAK_HASH_SECURITY]: {
    severity: HIGH,
    confidence: likely,
    cwe: 'CWE-328',
    remediation: 'Hash passwords with hashlib.scrypt or hashlib.pbkdf2_hmac and a random salt; sign with hmac and SHA-256; compare with hmac.compare_digest.',
  },
  [RuleId.PYTHON_WEAK_HASH]: { severity: MEDIUM, confidence: likely, cwe: 'CWE-328', remediation: 'Use hashlib.sha256; for a checksum that is not about security, pass usedforsecurity=False.' },
  [RuleId.PYTHON_WEAK_CIPHER]: { severity: HIGH, confidence: sure, cwe: 'CWE-327', remediation: 'Use AES-GCM or ChaCha20-Poly1305 from the cryptography package (cryptography.hazmat.primitives.ciphers.aead).' },
  [RuleId.PYTHON_WEAK_CIPHER_MODE]: { severity: MEDIUM, confidence: sure, cwe: 'CWE-327', remediation: 'Use an authenticated mode (AES-GCM via cryptography.hazmat.primitives.ciphers.aead.AESGCM) with a random nonce.' },
  [RuleId.PYTHON_WEAK_KEY]: { severity: HIGH, confidence: sure, cwe: 'CWE-326', remediation: 'Use key_size=2048 or more for RSA and DSA (3072 for new keys), or an EC curve of 256 bits (ec.SECP256R1()).' },
  [RuleId.PYTHON_TLS_NO_VERIFY]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-295',
    remediation: 'Keep certificate checks on: drop verify=False, use ssl.create_default_context(); for a private CA pass verify="/path/to/ca.pem" or cafile=.',
  },
  [RuleId.PYTHON_TLS_OLD_PROTOCOL]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-327',
    remediation: 'Use ssl.create_default_context() (TLS 1.2+), or ssl.PROTOCOL_TLS_CLIENT with minimum_version = ssl.TLSVersion.TLSv1_2.',
  },
  [RuleId.PYTHON_XML_ENTITIES]: { severity: HIGH, confidence: sure, cwe: 'CWE-611', remediation: 'Leave entity resolution off (lxml: resolve_entities=False, no_network=True), or parse with defusedxml.' },
  [RuleId.PYTHON_XML_UNSAFE_PARSER]: {
    severity: MEDIUM,
    confidence: likely,
    cwe: 'CWE-776',
    remediation: 'Parse untrusted XML with defusedxml (defusedxml.ElementTree.fromstring), or use JSON; for files the code writes itself this is fine.',
  },
  [RuleId.PYTHON_UNSAFE_DESERIALIZATION]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-502',
    remediation: 'Store data as JSON (json.load/json.dump) or CSV; for YAML use yaml.safe_load; unpickling runs code chosen by whoever wrote the bytes.',
  },
  [RuleId.PYTHON_JINJA2_AUTOESCAPE_OFF]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-79',
    remediation: "Create the environment with autoescape=select_autoescape(['html', 'xml']) (or autoescape=True).",
  },
  [RuleId.PYTHON_FLASK_DEBUG]: { severity: HIGH, confidence: likely, cwe: 'CWE-94', remediation: 'Drop debug=True (read it from an environment variable for local development, e.g. FLASK_DEBUG).' },
  [RuleId.PYTHON_SSH_NO_HOST_KEY_CHECK]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-295',
    remediation: 'Use paramiko.RejectPolicy() (the default) and load known hosts with client.load_system_host_keys() or load_host_keys(path).',
  },
  [RuleId.PYTHON_INSECURE_TEMPFILE]: {
    severity: MEDIUM,
    confidence: sure,
    cwe: 'CWE-377',
    remediation: 'Use tempfile.mkstemp(), tempfile.NamedTemporaryFile() or tempfile.TemporaryDirectory(), which create the file atomically.',
  },
  [RuleId.PYTHON_HARDCODED_PASSWORD]: { severity: MEDIUM, confidence: likely, cwe: 'CWE-798', remediation: 'Read secrets from the environment (os.environ["APP_PASSWORD"]) or a secrets file outside the code.' },
  [RuleId.PYTHON_SQL_STRING_FORMAT]: {
    severity: HIGH,
    confidence: likely,
    cwe: 'CWE-89',
    remediation: 'Pass values as parameters: cursor.execute("SELECT * FROM users WHERE id = ?", (user_id,)) (%s for most non-sqlite drivers).',
  },
  [RuleId.PYTHON_BIND_ALL_INTERFACES]: { severity: MEDIUM, confidence: likely, cwe: 'CWE-1327', remediation: 'Bind to 127.0.0.1 unless the service must be reachable from other machines; take the host from configuration.' },
  [RuleId.PYTHON_TAR_EXTRACT_ALL]: {
    severity: HIGH,
    confidence: likely,
    cwe: 'CWE-22',
    remediation: "Pass filter='data' (Python 3.12, and 3.8-3.11 security releases), or pass members= the entries whose resolved paths stay inside the target directory.",
  },
  [RuleId.PYTHON_CLEARTEXT_PROTOCOL]: { severity: HIGH, confidence: sure, cwe: 'CWE-319', remediation: 'Use SSH/SFTP (paramiko) instead of telnet, and FTP_TLS or SFTP instead of plain FTP.' },
  [RuleId.PYTHON_DEPRECATED_CRYPTO]: { severity: HIGH, confidence: likely, cwe: 'CWE-327', remediation: 'Use the cryptography package (or pycryptodomex, imported as Cryptodome) instead of pyCrypto.' },
  [RuleId.PYTHON_PERMISSIVE_FILE_MODE]: { severity: HIGH, confidence: sure, cwe: 'CWE-732', remediation: 'Give the file only the permissions it needs, e.g. 0o644 for data or 0o755 for a script; never world-writable.' },
  [RuleId.JS_DYNAMIC_EVAL]: { severity: HIGH, confidence: sure, cwe: 'CWE-95', remediation: 'Do not evaluate code built at run time: parse data with JSON.parse, or dispatch through a map of functions.' },
  [RuleId.JS_FUNCTION_CONSTRUCTOR]: { severity: HIGH, confidence: sure, cwe: 'CWE-95', remediation: 'Do not build functions from strings; write the function in the source, or dispatch through a map of functions.' },
  [RuleId.JS_VM]: { severity: HIGH, confidence: sure, cwe: 'CWE-95', remediation: 'Do not run code through the vm module; write the logic in the source.' },
  [RuleId.JS_SHELL_COMMAND]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-78',
    remediation: "Run the program without a shell and pass arguments as an array: execFile('git', ['log', '-1', ref]) or spawn(program, args) without shell: true.",
  },
  [RuleId.JS_SHELL_LITERAL]: { severity: LOW, confidence: sure, cwe: 'CWE-78', remediation: "Prefer execFile with an argument array (execFile('ls', ['-l'])); a shell is not needed for a fixed command." },
  [RuleId.JS_PROCESS_SPAWN]: { severity: MEDIUM, confidence: Confidence.LOW, cwe: 'CWE-78', remediation: 'Name the program literally, or pick it from a fixed list of allowed programs.' },
  [RuleId.JS_PROCESS_INTERNALS]: { severity: HIGH, confidence: sure, cwe: 'CWE-78', remediation: 'Do not reach into process internals; use child_process.execFile with a literal program if a process is really needed.' },
  [RuleId.JS_TLS_NO_VERIFY]: {
    severity: HIGH,
    confidence: sure,
    cwe: 'CWE-295',
    remediation: 'Keep certificate checks on: drop rejectUnauthorized: false and NODE_TLS_REJECT_UNAUTHORIZED; for a private CA pass ca: fs.readFileSync(caPath).',
  },
  [RuleId.JS_WEAK_CIPHER]: { severity: HIGH, confidence: sure, cwe: 'CWE-327', remediation: "Use crypto.createCipheriv('aes-256-gcm', key, iv) with a random 12-byte IV and check the auth tag." },
  [RuleId.JS_WEAK_HASH_SECURITY]: {
    severity: HIGH,
    confidence: likely,
    cwe: 'CWE-328',
    remediation: 'Hash passwords with crypto.scrypt and a random salt; sign with crypto.createHmac("sha256", key); compare with crypto.timingSafeEqual.',
  },
  [RuleId.JS_WEAK_HASH]: { severity: MEDIUM, confidence: likely, cwe: 'CWE-328', remediation: "Use crypto.createHash('sha256')." },
  [RuleId.JS_WEAK_KEY]: { severity: HIGH, confidence: sure, cwe: 'CWE-326', remediation: 'Use modulusLength: 2048 or more (3072 for new keys), or an EC key on P-256 or Ed25519.' },
  [RuleId.JS_SQL_STRING_FORMAT]: {
    severity: HIGH,
    confidence: likely,
    cwe: 'CWE-89',
    remediation: "Pass values as parameters: db.query('SELECT * FROM users WHERE id = $1', [id]) (? for sqlite and mysql).",
  },
};

const severityRank: Readonly<Record<Severity, number>> = { info: 0, low: 1, medium: 2, high: 3, critical: 4 };
const confidenceRank: Readonly<Record<Confidence, number>> = { low: 0, medium: 1, high: 2 };
const verdictRank: Readonly<Record<Verdict, number>> = { allow: 0, warn: 1, block: 2 };

/** Compares severities: negative when `left` is less severe than `right`. */
export function compareSeverity(left: Severity, right: Severity): number {
  return severityRank[left] - severityRank[right];
}

/** Compares confidences: negative when `left` is less sure than `right`. */
export function compareConfidence(left: Confidence, right: Confidence): number {
  return confidenceRank[left] - confidenceRank[right];
}

/** Compares verdicts: negative when `left` is less severe than `right` (allow < warn < block). */
export function compareVerdict(left: Verdict, right: Verdict): number {
  return verdictRank[left] - verdictRank[right];
}

/** The most severe action among `findings` the change introduced: BLOCK over WARN over ALLOW; ALLOW when there are none. */
export function verdictOf(findings: readonly Pick<Finding, 'action' | 'preExisting'>[]): Verdict {
  let verdict: Verdict = Verdict.ALLOW;
  for (const found of findings) if (found.preExisting !== true && compareVerdict(found.action, verdict) > 0) verdict = found.action;
  return verdict;
}

/** A 0-based position, as tree-sitter reports it. */
export interface Position {
  readonly row: number;
  readonly column: number;
}

/**
 * Builds the detections of one file: turns tree-sitter's 0-based positions
 * into 1-based lines and columns and attaches the source line as the snippet
 * and the rule's severity, confidence, CWE and remedy.
 */
export class FileFindings {
  readonly findings: Detection[] = [];
  private lines: string[] | undefined;

  constructor(
    readonly path: string,
    private readonly source: string,
  ) {}

  /** Records a match of `rule` at `position` (0-based). */
  add(rule: RuleId, position: Position, message: string): void {
    this.findings.push({ ...detectionOf(rule, this.path, message), line: position.row + 1, column: position.column + 1, snippet: snippetOf(this.lineAt(position.row)) });
  }

  /** Records a match of `rule` about the file as a whole (line and column 0, no snippet). */
  addForFile(rule: RuleId, message: string): void {
    this.findings.push(detectionOf(rule, this.path, message));
  }

  /** The source line at `row` (0-based), or empty past the end. */
  lineAt(row: number): string {
    this.lines ??= this.source.split('\n');
    return this.lines[row] ?? '';
  }
}

/** A built-in rule's detection about a whole file (or, with an empty path, the whole check). */
export function detectionOf(rule: RuleId, path: string, message: string): Detection {
  const text = ruleTexts[rule];
  return { ruleId: rule, severity: text.severity, path, line: 0, column: 0, message, snippet: '', remediation: text.remediation, cwe: text.cwe, confidence: text.confidence, tool: Tool.RATCHET };
}

/** A source line as a snippet: trimmed and capped at {@link maxSnippetLength} characters. */
export function snippetOf(line: string): string {
  const trimmed = line.trim();
  return trimmed.length > maxSnippetLength ? `${trimmed.slice(0, maxSnippetLength - 3)}...` : trimmed;
}

/**
 * Keeps at most `max` findings for the response. When it must drop some it
 * keeps the change's own before pre-existing ones, then the ones with the
 * most severe action, then severity (earliest first among equals), restores their order and appends one FINDINGS_TRUNCATED
 * finding saying how many were left out.
 */
export function capFindings(findings: readonly Finding[], max: number): Finding[] {
  if (findings.length <= max) return [...findings];
  const kept = Math.max(0, max - 1);
  const chosen = findings
    .map((found, index) => ({ found, index }))
    .sort(
      (left, right) =>
        Number(left.found.preExisting === true) - Number(right.found.preExisting === true) ||
        compareVerdict(right.found.action, left.found.action) ||
        compareSeverity(right.found.severity, left.found.severity) ||
        left.index - right.index,
    )
    .slice(0, kept)
    .sort((left, right) => left.index - right.index)
    .map(({ found }) => found);
  const omitted = findings.length - kept;
  const note = detectionOf(RuleId.FINDINGS_TRUNCATED, '', `${omitted} more findings were left out of this response (at most ${max} are listed); the verdict counts them all`);
  return [...chosen, { ...note, action: Verdict.ALLOW }];
}
