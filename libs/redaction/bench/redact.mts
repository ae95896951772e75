// Secret redaction time per KB, for what Ratchet stores: lessons and failures
// (a few KB), task events with test output (tens of KB) and the largest tool
// output a task keeps (1 MB). The text mixes code, pytest output, stack traces
// and logs with a secret every few KB, as a failed run's output does. Also the
// inputs that are hardest for the rules (one 1 MB base64 blob, 1 MB of
// `password: x` lines, PEM headers without an end), and the cost of compiling
// the rules, which callers pay once. Medians of several runs.
//
// Run with `npm run bench` (builds first) or
// `node libs/redaction/bench/redact.mts [runs]` after `npx nx run @ratchet/redaction:build`.
// Smoke run: RATCHET_BENCH_SMOKE=1 (`npx nx run @ratchet/agent:bench -c smoke`,
// as CI runs it) times every input once, only to show the bench still runs;
// its figures then mean nothing. A [runs] given still counts.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
// The bench runs the built package (node cannot run the TypeScript sources
// directly), so it imports the package by name rather than by relative path.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createRedactor, loadRedactionRules } from '@ratchet/redaction';

const smoke = process.env['RATCHET_BENCH_SMOKE'] === '1';
const runs = Number(process.argv[2] ?? (smoke ? 1 : 9));
const configDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../config');

// Made-up keys, new on every run.
const randomText = (bytes: number) => randomBytes(bytes).toString('base64url');
const secrets = [
  () => `OPENAI_API_KEY=sk-proj-${randomText(60)}`,
  () => `export GITHUB_TOKEN=ghp_${randomText(27).replace(/[-_]/g, 'x')}`,
  () => `DATABASE_URL=postgres://app:${randomText(12)}@db:5432/app`,
  () => `{"error":{"message":"Incorrect API key provided: sk-${randomText(36)}.","code":"invalid_api_key"}}`,
  () => `Authorization: Bearer ${randomText(30)}`,
  () => `  password: ${randomText(9)}`,
  () => `INFO uploaded with credential ${randomText(30)}`,
];

const snippets = [
  `def test_refresh_token_expired(client):\n    token = issue_token(user_id=42, ttl=timedelta(seconds=-1))\n>   assert refresh(token) is None\nE   AssertionError: assert <Token user_id=42> is None\n\ntests/test_auth.py:57: AssertionError`,
  `Traceback (most recent call last):\n  File "/usr/lib/python3.11/site-packages/requests/adapters.py", line 486, in send\n    resp = conn.urlopen(\nurllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='api.example.com', port=443): Max retries exceeded`,
  `TypeError: Cannot read properties of undefined (reading 'accessToken')\n    at AuthService.refresh (/home/runner/work/api/api/src/auth/auth.service.ts:88:31)\n    at async TokenController.refresh (/home/runner/work/api/api/src/auth/token.controller.ts:41:12)`,
  `export const loginSchema = z.object({\n  username: z.string().min(1),\n  password: z.string().min(8),\n});\nexport function verify(token: string): Claims {\n  return jwt.verify(token, settings.secret) as Claims;\n}`,
  `commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Jane Doe <jane@example.com>\n\n    Rotate the session token on login\n sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`,
  `2024-05-01T12:00:03.412Z INFO request_id=01HXYZ8K3M9Q2R7T5V4W6X8Y0Z task=3f2504e0-4f89-11d3-9a0c-0305e82c3301 method=POST path=/v1/tokens status=401 duration_ms=12`,
  `class HTTPServerErrorHandler2Factory extends AbstractSingletonProxyFactoryBean {\n  handle(request: Request): Response { return this.delegate.handle(request); }\n}`,
];

/** About `kilobytes` KB of ordinary output with a secret first and then every 4 KB or so. */
function mixedText(kilobytes: number): string {
  const parts: string[] = [];
  let length = 0;
  let sinceSecret = Number.POSITIVE_INFINITY;
  for (let index = 0; length < kilobytes * 1024; index += 1) {
    const part = sinceSecret > 4096 ? (secrets[index % secrets.length] ?? secrets[0]!)() : (snippets[index % snippets.length] ?? '');
    sinceSecret = sinceSecret > 4096 ? 0 : sinceSecret + part.length;
    parts.push(part);
    length += part.length + 1;
  }
  return parts.join('\n');
}

const median = (values: number[]) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)] ?? 0;
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

const compileMs: number[] = [];
let redactor = createRedactor();
for (let run = 0; run < runs; run += 1) {
  const started = performance.now();
  redactor = createRedactor(loadRedactionRules(configDir));
  compileMs.push(performance.now() - started);
}

function measure(name: string, text: string): Record<string, unknown> {
  redactor.redact(text); // warm-up: the first call compiles the regular expressions' code
  const times: number[] = [];
  let found = 0;
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    const result = redactor.redact(text);
    times.push(performance.now() - started);
    found = result.found.reduce((sum, finding) => sum + finding.count, 0);
  }
  const ms = median(times);
  const kilobytes = text.length / 1024;
  return { input: name, kilobytes: round(kilobytes), ms: round(ms, 2), usPerKb: round((ms * 1000) / kilobytes), mbPerSecond: round(text.length / 1e6 / (ms / 1000)), secretsFound: found };
}

const results = [
  ...[1, 4, 64, 1024].map((kilobytes) => measure(`mixed ${kilobytes} KB`, mixedText(kilobytes))),
  measure('base64 blob 1 MB', randomBytes(768 * 1024).toString('base64')),
  measure('password: x lines 1 MB', 'password: x\n'.repeat(87_382)),
  measure('PEM headers without end 1 MB', '-----BEGIN PRIVATE KEY-----\n'.repeat(37_450)),
];

console.table(results);
console.log(`createRedactor(loadRedactionRules()): ${round(median(compileMs), 2)} ms`);
console.log(JSON.stringify({ bench: 'redact', runs, compileMs: round(median(compileMs), 2), results }));
