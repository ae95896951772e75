import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { CheckCodeRequest, SafetyVerdict } from '@ratchet/contracts';
import { parse } from 'yaml';
import { analyzeFile, applyPolicy, createSafetyService, defaultLimits, loadCodeCheck, loadParsers, runBandit, Severity, verdictOf, type Parsers, type SafetyService, type SourceText } from '../src';
import { startSandbox, type SandboxFixture } from './sandbox';

// Every program of services/safety/corpus through the real CheckCode (built-in rules, ESLint, and
// Bandit in the real sandbox), against its label in corpus/manifest.yaml; and the figures the
// issue asks for: recall on what Bandit itself rates HIGH, the tree-sitter pre-check's recall alone,
// and false blocks on the benign programs.
jest.setTimeout(180_000);

const corpusDir = path.join(__dirname, '..', 'corpus');
const configDir = path.join(__dirname, '..', '..', '..', 'config');
type Label = 'block' | 'warn' | 'allow';
const manifest = parse(readFileSync(path.join(corpusDir, 'manifest.yaml'), 'utf8')) as { files: Record<string, { expect: Label; why: string }> };
const files: SourceText[] = listFiles(corpusDir).map((file) => ({ path: file, content: readFileSync(path.join(corpusDir, file), 'utf8') }));
const isPython = (file: SourceText) => file.path.endsWith('.py');
const isBenign = (file: string) => file.split('/')[1] === 'benign';

function listFiles(directory: string, prefix = ''): string[] {
  return readdirSync(path.join(directory, prefix), { withFileTypes: true }).flatMap((entry) => {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) return listFiles(directory, relative);
    return /\.(py|ts|tsx|js)$/.test(entry.name) ? [relative] : [];
  });
}

const verdictLabel: Readonly<Record<number, Label>> = { [SafetyVerdict.SAFETY_VERDICT_ALLOW]: 'allow', [SafetyVerdict.SAFETY_VERDICT_WARN]: 'warn', [SafetyVerdict.SAFETY_VERDICT_BLOCK]: 'block' };
const rank: Readonly<Record<Label, number>> = { allow: 0, warn: 1, block: 2 };

let fixture: SandboxFixture;
let parsers: Parsers;
let safety: SafetyService;
/** Per file, what CheckCode made of it (the most severe action of its findings) and the rules behind it. */
const checked = new Map<string, { verdict: Label; rules: string[] }>();
/** Python files Bandit rates HIGH (any finding of HIGH severity), from one Bandit job over the whole corpus. */
let banditHigh: string[] = [];

beforeAll(async () => {
  [fixture, parsers] = await Promise.all([startSandbox(), loadParsers()]);
  safety = await createSafetyService({ parsers, code: loadCodeCheck(configDir, {}), sandbox: fixture.sandbox });
  const deadline = Date.now() + 120_000;
  const signal = new AbortController().signal;
  // Bandit's own ratings: one job over every Python file, no policy.
  const bandit = await runBandit(fixture.sandbox, files.filter(isPython), { taskId: 'corpus', iteration: 1, deadline, signal });
  if (!bandit.ran) throw new Error(`Bandit did not run: ${bandit.reason}\n${fixture.output()}`);
  banditHigh = [...new Set(bandit.report.detections.filter((found) => found.severity === Severity.HIGH).map((found) => found.path))].sort();
  // CheckCode as the orchestrator calls it, in batches of the most files one call takes.
  for (let start = 0; start < files.length; start += defaultLimits.maxFiles) {
    const batch = files.slice(start, start + defaultLimits.maxFiles);
    const response = await safety.implementation.checkCode(CheckCodeRequest.fromPartial({ taskId: 'corpus', iteration: 1, files: batch }), { requestId: 'corpus', deadline, signal, headers: {} });
    const unscanned = response.findings.filter((found) => found.path === '');
    if (unscanned.length > 0) throw new Error(`a scanner did not run: ${unscanned.map((found) => found.message).join('; ')}`);
    for (const file of batch) checked.set(file.path, { verdict: 'allow', rules: [] });
    for (const found of response.findings) {
      const entry = checked.get(found.path);
      const action = verdictLabel[found.action] ?? 'block';
      if (entry === undefined) continue;
      if (rank[action] > rank[entry.verdict]) entry.verdict = action;
      if (action !== 'allow') entry.rules.push(found.ruleId);
    }
  }
});

afterAll(async () => {
  await safety?.close();
  parsers?.close();
  await fixture?.stop();
});

describe('the safety corpus', () => {
  it('labels every file, and every label has a file', () => {
    expect(files.map((file) => file.path).sort()).toEqual(Object.keys(manifest.files).sort());
    for (const [file, label] of Object.entries(manifest.files)) expect([file, ['block', 'warn', 'allow'].includes(label.expect), label.why.length > 10]).toEqual([file, true, true]);
    expect(files.filter((file) => isPython(file) && !isBenign(file.path) && manifest.files[file.path]?.expect === 'block').length).toBeGreaterThanOrEqual(30);
    expect(files.filter((file) => !isPython(file) && !isBenign(file.path)).length).toBeGreaterThanOrEqual(10);
    expect(files.filter((file) => isBenign(file.path)).length).toBeGreaterThanOrEqual(30);
  });

  it('gives every file the verdict its label says, with Bandit in the real sandbox', () => {
    const wrong = files
      .map((file) => ({ file: file.path, expected: manifest.files[file.path]?.expect, got: checked.get(file.path)?.verdict, rules: checked.get(file.path)?.rules.join(', ') }))
      .filter((row) => row.expected !== row.got);
    expect(wrong).toEqual([]);
  });

  it('blocks at least 95% of what Bandit rates HIGH, and no benign program', () => {
    const pythonFiles = files.filter(isPython);
    const blocked = banditHigh.filter((file) => checked.get(file)?.verdict === 'block');
    // The pre-check alone: the built-in rules under the same policy, no Bandit, no ESLint.
    const preCheck = (file: SourceText) => verdictOf(applyPolicy(loadCodeCheck(configDir, {}).policy, analyzeFile(parsers, file)));
    const blockedByPreCheck = banditHigh.filter((file) => preCheck(files.find((candidate) => candidate.path === file)!) === 'block');
    const benign = files.filter((file) => isBenign(file.path));
    const falseBlocks = benign.filter((file) => checked.get(file.path)?.verdict === 'block').map((file) => file.path);
    const dangerous = files.filter((file) => !isBenign(file.path));
    const percent = (part: number, whole: number) => `${whole === 0 ? 0 : Math.round((1000 * part) / whole) / 10}%`;
    console.log(
      [
        `safety corpus: ${files.length} files (${pythonFiles.length} Python, ${files.length - pythonFiles.length} TypeScript; ${dangerous.length} dangerous, ${benign.length} benign)`,
        `  Bandit rates ${banditHigh.length} Python files HIGH; CheckCode blocks ${blocked.length} of them: recall ${percent(blocked.length, banditHigh.length)}`,
        `  tree-sitter pre-check alone blocks ${blockedByPreCheck.length} of them: recall ${percent(blockedByPreCheck.length, banditHigh.length)}`,
        `  dangerous files blocked: ${dangerous.filter((file) => checked.get(file.path)?.verdict === 'block').length} of ${dangerous.length} (the others are labelled warn)`,
        `  false blocks on benign files: ${falseBlocks.length} of ${benign.length}; benign files allowed: ${benign.filter((file) => checked.get(file.path)?.verdict === 'allow').length}, warned: ${benign.filter((file) => checked.get(file.path)?.verdict === 'warn').length}`,
      ].join('\n'),
    );
    expect(banditHigh.length).toBeGreaterThanOrEqual(10);
    expect(blocked.length / banditHigh.length).toBeGreaterThanOrEqual(0.95);
    expect(falseBlocks).toEqual([]);
  });
});
