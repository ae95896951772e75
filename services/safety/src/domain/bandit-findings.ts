import { z } from 'zod';
import { compareConfidence, compareSeverity, Confidence, Severity, snippetOf, Tool, type Detection } from './findings';

/**
 * The weakness of each Bandit test. Bandit 1.6.2 (what the sandbox image
 * ships) reports no CWE, so these are the ones later Bandit releases attach
 * to the same test ids; an id missing here gets an empty CWE.
 */
export const banditCwe: Readonly<Record<string, string>> = {
  B101: 'CWE-703',
  B102: 'CWE-78',
  B103: 'CWE-732',
  B104: 'CWE-605',
  B105: 'CWE-259',
  B106: 'CWE-259',
  B107: 'CWE-259',
  B108: 'CWE-377',
  B110: 'CWE-703',
  B112: 'CWE-703',
  B113: 'CWE-400',
  B201: 'CWE-94',
  B202: 'CWE-22',
  B301: 'CWE-502',
  B302: 'CWE-502',
  B303: 'CWE-327',
  B304: 'CWE-327',
  B305: 'CWE-327',
  B306: 'CWE-377',
  B307: 'CWE-78',
  B308: 'CWE-79',
  B309: 'CWE-295',
  B310: 'CWE-22',
  B311: 'CWE-330',
  B312: 'CWE-319',
  B313: 'CWE-20',
  B314: 'CWE-20',
  B315: 'CWE-20',
  B316: 'CWE-20',
  B317: 'CWE-20',
  B318: 'CWE-20',
  B319: 'CWE-20',
  B320: 'CWE-20',
  B321: 'CWE-319',
  B322: 'CWE-78',
  B323: 'CWE-295',
  B324: 'CWE-327',
  B325: 'CWE-377',
  B401: 'CWE-319',
  B402: 'CWE-319',
  B403: 'CWE-502',
  B404: 'CWE-78',
  B405: 'CWE-20',
  B406: 'CWE-20',
  B407: 'CWE-20',
  B408: 'CWE-20',
  B409: 'CWE-20',
  B410: 'CWE-20',
  B411: 'CWE-20',
  B412: 'CWE-284',
  B413: 'CWE-327',
  B501: 'CWE-295',
  B502: 'CWE-327',
  B503: 'CWE-327',
  B504: 'CWE-327',
  B505: 'CWE-326',
  B506: 'CWE-20',
  B507: 'CWE-295',
  B508: 'CWE-319',
  B509: 'CWE-319',
  B601: 'CWE-78',
  B602: 'CWE-78',
  B603: 'CWE-78',
  B604: 'CWE-78',
  B605: 'CWE-78',
  B606: 'CWE-78',
  B607: 'CWE-78',
  B608: 'CWE-89',
  B609: 'CWE-78',
  B610: 'CWE-89',
  B611: 'CWE-89',
  B701: 'CWE-94',
  B702: 'CWE-80',
  B703: 'CWE-80',
};

/** What to do instead, for the tests whose advice fits in a line; the others point at Bandit's page for the test. */
const banditRemediation: Readonly<Record<string, string>> = {
  B101: 'Raise an exception (ValueError, RuntimeError) instead of assert for checks that must hold in production; python -O removes asserts.',
  B102: 'Do not exec code built at run time; dispatch through a dict of functions.',
  B103: 'Give the file only the permissions it needs (0o644, 0o755); never world-writable.',
  B104: 'Bind to 127.0.0.1 unless other machines must reach the service.',
  B105: 'Read secrets from the environment or a secrets file, not from the code.',
  B106: 'Read secrets from the environment or a secrets file, not from the code.',
  B107: 'Read secrets from the environment or a secrets file, not from the code.',
  B108: 'Use tempfile.mkstemp() or tempfile.TemporaryDirectory() instead of a fixed name in /tmp.',
  B110: 'Handle or log the exception; a bare `except: pass` hides failures.',
  B201: 'Drop debug=True; read it from the environment for local development.',
  B301: 'Store data as JSON; unpickling runs code chosen by whoever wrote the bytes.',
  B302: 'Store data as JSON; marshal is not safe for data from elsewhere.',
  B303: 'Use hashlib.sha256 (hashlib.scrypt or pbkdf2_hmac for passwords); mark checksums usedforsecurity=False.',
  B304: 'Use AES-GCM or ChaCha20-Poly1305 from the cryptography package.',
  B305: 'Use an authenticated mode such as AES-GCM instead of ECB.',
  B306: 'Use tempfile.mkstemp() or NamedTemporaryFile(), which create the file atomically.',
  B307: 'Use ast.literal_eval for literals, or compute the value without evaluating text.',
  B311: 'Use the secrets module for tokens, passwords and keys.',
  B312: 'Use SSH (paramiko) instead of telnet.',
  B321: 'Use SFTP or FTP_TLS instead of plain FTP.',
  B323: 'Use ssl.create_default_context(), which verifies certificates.',
  B324: 'Use hashlib.sha256, or pass usedforsecurity=False for a checksum.',
  B401: 'Use SSH (paramiko) instead of telnet.',
  B402: 'Use SFTP or FTP_TLS instead of plain FTP.',
  B403: 'Store data as JSON instead of pickle.',
  B413: 'Use the cryptography package (or pycryptodomex, imported as Cryptodome) instead of pyCrypto.',
  B501: 'Drop verify=False; pass verify="/path/to/ca.pem" for a private CA.',
  B502: 'Use ssl.create_default_context() (TLS 1.2+).',
  B503: 'Use ssl.create_default_context() (TLS 1.2+).',
  B504: 'Use ssl.create_default_context() instead of ssl.wrap_socket().',
  B505: 'Use RSA/DSA keys of 2048 bits or more, or EC keys of 256 bits.',
  B506: 'Use yaml.safe_load().',
  B507: 'Use paramiko.RejectPolicy() and load known host keys.',
  B602: 'Drop shell=True: pass the program and its arguments as a list.',
  B603: 'Make sure the program and arguments come from a fixed list, not from input.',
  B604: 'Drop shell=True: pass the program and its arguments as a list.',
  B605: 'Use subprocess.run with a list of arguments and no shell.',
  B606: 'Use subprocess.run with a list of arguments.',
  B607: 'Call the program by its full path if the PATH may be controlled by someone else.',
  B608: 'Pass values as query parameters (cursor.execute("... WHERE id = ?", (value,))).',
  B609: 'Do not pass wildcards to a shell command; list the files in Python (pathlib.Path.glob).',
  B701: "Create the environment with autoescape=select_autoescape(['html', 'xml']).",
  B702: 'Escape template output (Mako default_filters=["h"]).',
};

const severityOf: Readonly<Record<string, Severity>> = { LOW: Severity.LOW, MEDIUM: Severity.MEDIUM, HIGH: Severity.HIGH, UNDEFINED: Severity.INFO };
const confidenceOf: Readonly<Record<string, Confidence>> = { LOW: Confidence.LOW, MEDIUM: Confidence.MEDIUM, HIGH: Confidence.HIGH, UNDEFINED: Confidence.LOW };

/** Bandit's severity and confidence words (as its report spells them) that reach `threshold` once mapped. */
export function banditWordsReaching(threshold: { readonly severity: Severity; readonly confidence: Confidence }): { severities: string[]; confidences: string[] } {
  return {
    severities: Object.keys(severityOf).filter((word) => compareSeverity(severityOf[word] as Severity, threshold.severity) >= 0),
    confidences: Object.keys(confidenceOf).filter((word) => compareConfidence(confidenceOf[word] as Confidence, threshold.confidence) >= 0),
  };
}

/** The parts of Bandit's JSON report (`-f json`) the mapping reads; other keys are ignored. */
const banditReportSchema = z.object({
  results: z.array(
    z.object({
      filename: z.string(),
      test_id: z.string(),
      test_name: z.string().default(''),
      issue_severity: z.string(),
      issue_confidence: z.string(),
      issue_text: z.string(),
      line_number: z.number().int(),
      col_offset: z.number().int().optional(),
      more_info: z.string().default(''),
    }),
  ),
  errors: z.array(z.object({ filename: z.string(), reason: z.string() })).default([]),
});

/** One file Bandit could not scan, and why. */
export interface BanditError {
  readonly path: string;
  readonly reason: string;
}

/** A Bandit report as detections, and the files it could not scan. */
export interface BanditReport {
  readonly detections: Detection[];
  readonly errors: BanditError[];
}

/** Marks the end of Bandit's options, so a file named `-x.py` is a file. */
const endOfOptions = '--';

/**
 * The command that scans `paths` (workspace-relative, already in the
 * sandbox's work directory) and prints a JSON report: the files are named,
 * so only they are scanned, whatever their extension; `# nosec` comments
 * are ignored (the code under check could silence Bandit with them);
 * `-x` replaces Bandit's default exclusions (.git, .tox, ...), which would
 * skip files in such directories. Bandit exits 1 when it finds something.
 */
export function banditCommand(paths: readonly string[]): string[] {
  // -I: the work directory, the user's site-packages and PYTHON* variables stay off the path, so no file of the code under check can stand in for Bandit.
  return ['python3', '-I', '-m', 'bandit', '-f', 'json', '-q', '--ignore-nosec', '-n', '1', '-x', '/ratchet-no-exclusions', endOfOptions, ...paths];
}

/**
 * Reads Bandit's JSON report and maps each result to a detection: rule id
 * `bandit.<test id>`, Bandit's severity and confidence, the CWE from
 * `banditCwe`, the line from the report and the snippet from `sources`
 * (path -> text, the files that were scanned). Results for files not in
 * `sources` are dropped; `./` prefixes are removed.
 *
 * @throws Error when `json` is not a Bandit report, with what is wrong.
 */
export function parseBanditReport(json: string, sources: ReadonlyMap<string, string>): BanditReport {
  const report = banditReportSchema.parse(JSON.parse(json));
  const lines = new Map<string, string[]>();
  const lineOf = (path: string, line: number) => {
    let fileLines = lines.get(path);
    if (fileLines === undefined) {
      fileLines = (sources.get(path) ?? '').split('\n');
      lines.set(path, fileLines);
    }
    return fileLines[line - 1] ?? '';
  };
  const detections: Detection[] = [];
  for (const result of report.results) {
    const path = cleanPath(result.filename);
    if (!sources.has(path)) continue;
    const testId = result.test_id;
    detections.push({
      ruleId: `bandit.${testId}`,
      severity: severityOf[result.issue_severity.toUpperCase()] ?? Severity.LOW,
      path,
      line: Math.max(0, result.line_number),
      column: result.col_offset === undefined ? 0 : result.col_offset + 1,
      message: `${result.issue_text.trim()} (${[testId, result.test_name].filter((part) => part !== '').join(' ')})`,
      snippet: snippetOf(lineOf(path, result.line_number)),
      remediation: banditRemediation[testId] ?? (result.more_info === '' ? `See Bandit's documentation of ${testId}.` : `See ${result.more_info}`),
      cwe: banditCwe[testId] ?? '',
      confidence: confidenceOf[result.issue_confidence.toUpperCase()] ?? Confidence.LOW,
      tool: Tool.BANDIT,
    });
  }
  const errors = report.errors.map((error) => ({ path: cleanPath(error.filename), reason: error.reason.trim() })).filter((error) => sources.has(error.path));
  // Bandit lists files in its own order; the answer follows the request's.
  const order = new Map([...sources.keys()].map((path, index) => [path, index]));
  detections.sort((left, right) => (order.get(left.path) ?? 0) - (order.get(right.path) ?? 0) || left.line - right.line);
  return { detections, errors };
}

/** A path as Bandit printed it, without its `./` prefixes. */
export function cleanPath(filename: string): string {
  return filename.replace(/^(\.\/)+/, '');
}
