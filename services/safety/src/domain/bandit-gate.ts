import type { SandboxCommand } from '@ratchet/contracts';
import { z } from 'zod';
import type { SourceText } from './analyze';
import { banditCommand, banditWordsReaching, cleanPath, parseBanditReport, type BanditReport } from './bandit-findings';
import { touchedLines } from './change-baseline';
import { CodeAction, pathPattern, type CodePolicy } from './code-policy';

/**
 * The exit code of a gate that found a blocking finding: the supervisor then
 * runs no test. Bandit itself exits 0 or 1, Python's own failures 1 or 2.
 */
export const gateBlockedExitCode = 3;

/**
 * The Bandit gate, run by `python3 -I -c` in the test job before the tests:
 * it runs Bandit over the files (isolated too), prints one JSON object (the
 * report, Bandit's exit code and the end of its stderr) and exits
 * `gateBlockedExitCode` when a finding would block by the policy as the
 * spec (argv[1]) spells it for each file: the first rule whose id pattern
 * matches decides, else the block threshold; findings on lines the change
 * did not touch are left to the check that reads the report. When Bandit
 * cannot run, it says so in the object and exits 0: whether the check may
 * do without Bandit is that check's to decide.
 */
const gateScript = String.raw`import json, re, subprocess, sys
spec = json.loads(sys.argv[1])
run = subprocess.run(spec["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
out = {"banditExitCode": run.returncode, "stderr": run.stderr.decode("utf-8", "replace")[-2000:], "report": None}
try:
    out["report"] = json.loads(run.stdout.decode("utf-8", "replace"))
except ValueError:
    out["stdout"] = run.stdout.decode("utf-8", "replace")[-2000:]
sys.stdout.write(json.dumps(out))
sys.stdout.flush()
if run.returncode not in (0, 1) or not isinstance(out["report"], dict):
    sys.exit(0)
def matches(pattern, rule_id):
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), rule_id) is not None
for result in out["report"].get("results", []):
    path = re.sub(r"^(\./)+", "", str(result.get("filename", "")))
    file = spec["files"].get(path)
    if file is None:
        continue
    if file["lines"] is not None and result.get("line_number") not in file["lines"]:
        continue
    rule_id = "bandit." + str(result.get("test_id", ""))
    action = next((spec["rules"][index]["action"] for index in file["rules"] if any(matches(pattern, rule_id) for pattern in spec["rules"][index]["ids"])), None)
    if action is None:
        reaches = str(result.get("issue_severity", "")).upper() in spec["block"]["severities"] and str(result.get("issue_confidence", "")).upper() in spec["block"]["confidences"]
        action = "block" if reaches else "other"
    if action == "block":
        sys.exit(${gateBlockedExitCode})
`;

/** What the gate knows of one file: the lines the change touched (null: all of them, a new file) and which of the policy's rules (by index) apply to its path. */
interface GateFile {
  readonly lines: readonly number[] | null;
  readonly rules: readonly number[];
}

/**
 * The gate command that scans `files` (workspace paths, in the test job's
 * work directory) under `policy`: `bases` holds the originals of the files
 * that had one, so only the lines the change touched can stop the tests.
 */
export function banditGateCommand(files: readonly SourceText[], bases: ReadonlyMap<string, string>, policy: CodePolicy, timeoutMs: number): SandboxCommand {
  const gateFiles: Record<string, GateFile> = {};
  for (const file of files) {
    const base = bases.get(file.path);
    gateFiles[file.path] = {
      lines: base === undefined ? null : [...touchedLines(base, file.content)],
      // Rules for other paths cannot match here; the gate matches the ids against Bandit's alone.
      rules: policy.rules.flatMap((rule, index) => (rule.paths === undefined || rule.paths.some((glob) => pathPattern(glob).test(file.path)) ? [index] : [])),
    };
  }
  const rules = policy.rules.map((rule): { ids: readonly string[]; action: CodeAction } => ({ ids: rule.ids, action: rule.action }));
  const spec = { argv: banditCommand(files.map((file) => file.path)), rules, files: gateFiles, block: banditWordsReaching(policy.block) };
  return { name: 'bandit-gate', argv: ['python3', '-I', '-c', gateScript, JSON.stringify(spec)], workingDirectory: '', timeout: { seconds: Math.ceil(timeoutMs / 1_000), nanos: 0 } };
}

const gateOutputSchema = z.object({ banditExitCode: z.number().int(), stderr: z.string().default(''), report: z.unknown(), stdout: z.string().optional() });

/** Bandit's report of the files a gate scanned, or why there is none. */
export type GateReport = { readonly ran: true; readonly report: BanditReport; readonly scanned: ReadonlySet<string> } | { readonly ran: false; readonly reason: string };

/**
 * Bandit's report from what a gate printed, for `sources` (path -> text, the
 * files that may be in it), with the paths it scanned: those in its metrics
 * or its errors (a file it scanned without findings has no result), so a
 * file the gate was not given is never taken for a clean one.
 */
export function readGateOutput(output: Uint8Array, sources: ReadonlyMap<string, string>): GateReport {
  const text = Buffer.from(output).toString('utf8');
  if (text.trim() === '') return { ran: false, reason: 'the gate in the test job printed nothing (it did not start, or the sandbox image has no python3)' };
  let parsed;
  try {
    parsed = gateOutputSchema.parse(JSON.parse(text));
  } catch (error) {
    return { ran: false, reason: `the gate's output was not its JSON (${firstLine(error)}; ${text.length} bytes; the test job's output cap may have cut it)` };
  }
  const stderr = parsed.stderr.trim().slice(-300).replace(/\s+/g, ' ') || 'empty';
  if (parsed.banditExitCode !== 0 && parsed.banditExitCode !== 1) {
    const missing = /No module named bandit/.test(parsed.stderr) ? '; the sandbox image has no Bandit: rebuild it with deploy/sandbox/build-image.sh' : '';
    return { ran: false, reason: `Bandit exited with code ${parsed.banditExitCode} in the test job${missing} (stderr: ${stderr})` };
  }
  try {
    const report = parseBanditReport(JSON.stringify(parsed.report), sources);
    const metrics = z.object({ metrics: z.record(z.string(), z.unknown()).default({}) }).parse(parsed.report).metrics;
    const scanned = new Set([...Object.keys(metrics).map(cleanPath), ...report.errors.map((error) => error.path)].filter((path) => sources.has(path)));
    return { ran: true, report, scanned };
  } catch (error) {
    return { ran: false, reason: `its report was not Bandit's JSON (${firstLine(error)}); stderr: ${stderr}` };
  }
}

function firstLine(error: unknown): string {
  return ((error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '').slice(0, 200);
}
