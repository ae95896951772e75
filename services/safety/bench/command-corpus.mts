// The command policy against its corpus: every line of
// services/safety/test/fixtures/command-corpus.yaml through the real
// CheckCommand with the shipped config/safety.yaml, then the confusion matrix
// (expected allow/ask/deny x actual allow/ask/deny), the counts that matter
// (dangerous lines allowed, ordinary lines denied) and every mismatch with
// the rules that decided it. Exits 1 when a line does not get its decision.
//
// Run with `npm run bench` (builds first) or
// `node services/safety/bench/command-corpus.mts` after building the safety
// service (`npx tsc -p services/safety/tsconfig.lib.json`). It takes a few
// seconds, so a smoke run (RATCHET_BENCH_SMOKE=1, as CI runs the benches)
// checks the whole corpus too.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// The report runs the built package (dist), as the safety process does.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { checkCommand, loadCommandPolicy, loadParsers } from '@ratchet/safety';
import { parse } from 'yaml';

type Decision = 'allow' | 'ask' | 'deny';
interface Entry {
  readonly line: string;
  readonly expect: Decision;
  readonly kind: 'dangerous' | 'ordinary';
  readonly why: string;
}

const here = path.dirname(fileURLToPath(import.meta.url));
const corpus = parse(readFileSync(path.join(here, '..', 'test', 'fixtures', 'command-corpus.yaml'), 'utf8')) as { commands: Entry[] };
const policy = loadCommandPolicy(path.join(here, '..', '..', '..', 'config'), {});
const parsers = await loadParsers();
const decisions: Decision[] = ['allow', 'ask', 'deny'];
const matrix = new Map<string, number>();
const mismatches: string[] = [];
let dangerousAllowed = 0;
let ordinaryDenied = 0;
try {
  for (const entry of corpus.commands) {
    const check = checkCommand(parsers, policy, { commandLine: entry.line, argv: [], workingDirectory: '' });
    const key = `${entry.expect}>${check.decision}`;
    matrix.set(key, (matrix.get(key) ?? 0) + 1);
    if (entry.kind === 'dangerous' && check.decision === 'allow') dangerousAllowed += 1;
    if (entry.kind === 'ordinary' && check.decision === 'deny') ordinaryDenied += 1;
    if (check.decision !== entry.expect) {
      mismatches.push(`  expected ${entry.expect}, got ${check.decision}: ${JSON.stringify(entry.line)} (${entry.why}) [${check.findings.map((finding) => finding.ruleId).join(', ') || 'no finding'}]`);
    }
  }
} finally {
  parsers.close();
}

const kinds = { dangerous: corpus.commands.filter((entry) => entry.kind === 'dangerous').length, ordinary: corpus.commands.filter((entry) => entry.kind === 'ordinary').length };
console.log(`command corpus: ${corpus.commands.length} lines (${kinds.dangerous} dangerous, ${kinds.ordinary} ordinary), config/safety.yaml`);
console.log('');
console.log(`expected \\ actual   ${decisions.map((decision) => decision.padStart(6)).join('')}   total`);
for (const expected of decisions) {
  const row = decisions.map((actual) => matrix.get(`${expected}>${actual}`) ?? 0);
  console.log(`${expected.padEnd(19)}${row.map((count) => String(count).padStart(6)).join('')}   ${String(row.reduce((sum, count) => sum + count, 0)).padStart(5)}`);
}
console.log('');
console.log(`deny-expected lines allowed: ${matrix.get('deny>allow') ?? 0}; dangerous lines allowed: ${dangerousAllowed}; ordinary lines denied: ${ordinaryDenied}`);
console.log(mismatches.length === 0 ? 'every line got its expected decision' : `${mismatches.length} mismatches:\n${mismatches.join('\n')}`);
process.exitCode = mismatches.length === 0 ? 0 : 1;
