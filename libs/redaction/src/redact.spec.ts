import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from '@ratchet/errors';
import { configuredSecrets, CONFIGURED_SECRET_RULE, createRedactor, defaultRedactionRules, HIGH_ENTROPY_RULE, loadRedactionRules, redactStrings, redactText } from './redact';

// Every key below is made up here from a seeded generator, never copied from
// anywhere, so the file holds no real secret and the tests are repeatable.
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
  return (alphabet: string, length: number) => Array.from({ length }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
}
const upper = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const alnum = `${upper}abcdefghijklmnopqrstuvwxyz0123456789`;
const base64 = `${alnum}+/`;
const base64url = `${alnum}-_`;
const fake = generator(20240501);
const base64Url = (text: string) => Buffer.from(text).toString('base64url');

const keys = {
  openaiProject: `sk-proj-${fake(base64url, 74)}T3BlbkFJ${fake(base64url, 74)}`,
  openaiLegacy: `sk-${fake(alnum, 20)}T3BlbkFJ${fake(alnum, 20)}`,
  anthropic: `sk-ant-api03-${fake(base64url, 93)}AA`,
  awsAccessKeyId: `AKIA${fake(`${upper}234567`, 16)}`,
  awsSessionKeyId: `ASIA${fake(`${upper}234567`, 16)}`,
  awsSecret: fake(base64, 40),
  githubClassic: `ghp_${fake(alnum, 36)}`,
  githubOauth: `gho_${fake(alnum, 36)}`,
  githubServer: `ghs_${fake(alnum, 36)}`,
  githubFineGrained: `github_pat_${fake(alnum, 22)}_${fake(alnum, 59)}`,
  gitlab: `glpat-${fake(base64url, 20)}`,
  slack: `xoxb-${fake('0123456789', 12)}-${fake('0123456789', 13)}-${fake(alnum, 24)}`,
  slackWebhookPath: `T${fake(`${upper}0123456789`, 8)}/B${fake(`${upper}0123456789`, 10)}/${fake(alnum, 24)}`,
  google: `AIza${fake(base64url, 35)}`,
  stripeSecret: `sk_live_${fake(alnum, 24)}`,
  stripeRestricted: `rk_live_${fake(alnum, 24)}`,
  huggingface: `hf_${fake('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ', 34)}`,
  npm: `npm_${fake(alnum, 36)}`,
  groq: `gsk_${fake(alnum, 52)}`,
  sendgrid: `SG.${fake(base64url, 22)}.${fake(base64url, 43)}`,
  jwt: `${base64Url('{"alg":"HS256","typ":"JWT"}')}.${base64Url('{"sub":"1234567890","name":"Fake User","iat":1516239022}')}.${fake(base64url, 43)}`,
  bearer: fake(base64url, 40),
  random: fake(alnum, 40),
};
/** Azure keys are 32 hex digits: redacted only where the line names a key, as a bare one is as often a digest. */
const azureKey = fake('0123456789abcdef', 32);
const pemBody = Array.from({ length: 12 }, () => fake(base64, 64)).join('\n');
const pem = `-----BEGIN RSA PRIVATE KEY-----\n${pemBody}\n-----END RSA PRIVATE KEY-----`;

describe('createRedactor with the built-in rules', () => {
  const redactor = createRedactor();
  const redact = (text: string) => redactor.redact(text);

  it.each([
    ['openai-key', `OPENAI_API_KEY=${keys.openaiProject}`, 'OPENAI_API_KEY=[REDACTED:openai-key]'],
    ['openai-key', `client = OpenAI(api_key="${keys.openaiLegacy}")`, 'client = OpenAI(api_key="[REDACTED:openai-key]")'],
    ['anthropic-key', `x-api-key: ${keys.anthropic}`, 'x-api-key: [REDACTED:anthropic-key]'],
    ['aws-access-key-id', `aws_access_key_id = ${keys.awsAccessKeyId}`, 'aws_access_key_id = [REDACTED:aws-access-key-id]'],
    ['aws-access-key-id', `"AccessKeyId": "${keys.awsSessionKeyId}"`, '"AccessKeyId": "[REDACTED:aws-access-key-id]"'],
    ['aws-secret-key', `aws_secret_access_key = ${keys.awsSecret}`, 'aws_secret_access_key = [REDACTED:aws-secret-key]'],
    ['aws-secret-key', `"SecretAccessKey": "${keys.awsSecret}"`, '"SecretAccessKey": "[REDACTED:aws-secret-key]"'],
    ['github-token', `git clone https://${keys.githubClassic}@github.com/o/r.git`, 'git clone https://[REDACTED:github-token]@github.com/o/r.git'],
    ['github-token', `GH_TOKEN=${keys.githubOauth}`, 'GH_TOKEN=[REDACTED:github-token]'],
    ['github-token', `token ${keys.githubServer}`, 'token [REDACTED:github-token]'],
    ['github-token', `pat: ${keys.githubFineGrained}`, 'pat: [REDACTED:github-token]'],
    ['gitlab-token', `PRIVATE-TOKEN: ${keys.gitlab}`, 'PRIVATE-TOKEN: [REDACTED:gitlab-token]'],
    ['slack-token', `slack_client = WebClient("${keys.slack}")`, 'slack_client = WebClient("[REDACTED:slack-token]")'],
    ['slack-webhook', `https://hooks.slack.com/services/${keys.slackWebhookPath}`, 'https://hooks.slack.com/services/[REDACTED:slack-webhook]'],
    ['google-api-key', `https://maps.googleapis.com/maps/api/geocode/json?address=x&key=${keys.google}`, 'https://maps.googleapis.com/maps/api/geocode/json?address=x&key=[REDACTED:google-api-key]'],
    ['stripe-key', `stripe.api_key = "${keys.stripeSecret}"`, 'stripe.api_key = "[REDACTED:stripe-key]"'],
    ['stripe-key', `STRIPE_KEY=${keys.stripeRestricted}`, 'STRIPE_KEY=[REDACTED:stripe-key]'],
    // An Azure endpoint echoing the key it refused, and the header it goes in.
    ['azure-key', `Access denied due to invalid subscription key ${azureKey}. Make sure to provide a valid key`, 'Access denied due to invalid subscription key [REDACTED:azure-key]. Make sure to provide a valid key'],
    ['azure-key', `Ocp-Apim-Subscription-Key: ${azureKey.toUpperCase()}`, 'Ocp-Apim-Subscription-Key: [REDACTED:azure-key]'],
    ['azure-key', `AZURE_OPENAI_KEY=${azureKey}`, 'AZURE_OPENAI_KEY=[REDACTED:azure-key]'],
    ['huggingface-token', `HF_TOKEN=${keys.huggingface}`, 'HF_TOKEN=[REDACTED:huggingface-token]'],
    ['npm-token', `//registry.npmjs.org/:_authToken=${keys.npm}`, '//registry.npmjs.org/:_authToken=[REDACTED:npm-token]'],
    ['groq-key', `Invalid API Key: ${keys.groq}`, 'Invalid API Key: [REDACTED:groq-key]'],
    ['sendgrid-key', `sg = SendGridAPIClient("${keys.sendgrid}")`, 'sg = SendGridAPIClient("[REDACTED:sendgrid-key]")'],
    ['jwt', `{"id_token": "${keys.jwt}"}`, '{"id_token": "[REDACTED:jwt]"}'],
    ['authorization', `Authorization: Bearer ${keys.bearer}`, 'Authorization: Bearer [REDACTED:authorization]'],
    ['authorization', `Authorization: Basic ${Buffer.from('admin:fake-pass-123').toString('base64')}`, 'Authorization: Basic [REDACTED:authorization]'],
    ['authorization', `headers = {"Authorization": "Bearer ${keys.bearer}"}`, 'headers = {"Authorization": "Bearer [REDACTED:authorization]"}'],
    ['bearer-token', `curl -H 'X-Auth: Bearer ${keys.bearer}' https://api.example.com`, "curl -H 'X-Auth: Bearer [REDACTED:bearer-token]' https://api.example.com"],
    ['url-password', 'DATABASE_URL=postgres://app:S3cr3t-Pa55@db:5432/x', 'DATABASE_URL=postgres://app:[REDACTED:url-password]@db:5432/x'],
    ['url-password', 'redis://:hunter2@cache:6379/0', 'redis://:[REDACTED:url-password]@cache:6379/0'],
    ['url-password', 'amqp://guest:guest@rabbit:5672/', 'amqp://guest:[REDACTED:url-password]@rabbit:5672/'],
    ['password', 'password: hunter2', 'password: [REDACTED:password]'],
    ['password', 'DB_PASSWORD=changeme', 'DB_PASSWORD=[REDACTED:password]'],
    ['password', '  - POSTGRES_PASSWORD=postgres', '  - POSTGRES_PASSWORD=[REDACTED:password]'],
    ['password', '{"username": "admin", "password": "fake-Pass-9"}', '{"username": "admin", "password": "[REDACTED:password]"}'],
    ['password', '{\\"password\\":\\"fake-Pass-9\\"}', '{\\"password\\":\\"[REDACTED:password]\\"}'],
    ['password', 'const dbPassword = "fake-Pass-9";', 'const dbPassword = "[REDACTED:password]";'],
    ['password', 'user = User(name="bob", password="fake-Pass-9")', 'user = User(name="bob", password="[REDACTED:password]")'],
    ['password', "'password' => 'fake-Pass-9',", "'password' => '[REDACTED:password]',"],
    ['password', 'INFO login user=bob password=fake-Pass-9 ok', 'INFO login user=bob password=[REDACTED:password] ok'],
    ['password', 'mysql --user=root --password=fake-Pass-9 app', 'mysql --user=root --password=[REDACTED:password] app'],
    ['password', 'password = hunter2', 'password = [REDACTED:password]'],
    ['password', 'https://example.com/login?user=bob&passwd=fake-Pass-9&next=/', 'https://example.com/login?user=bob&passwd=[REDACTED:password]&next=/'],
    ['secret', 'client_secret: 6f1c2b9e-fake-secret', 'client_secret: [REDACTED:secret]'],
    ['secret', "SECRET_KEY = 'django-insecure-fake-0123456789'", "SECRET_KEY = '[REDACTED:secret]'"],
    ['token', 'https://example.com/callback?code=abc&access_token=fake-token-123&state=x', 'https://example.com/callback?code=abc&access_token=[REDACTED:token]&state=x'],
    // `#` stays part of a value (passwords hold it); a URL fragment after a token goes with it.
    ['token', 'https://example.com/cb#access_token=fake-token-123#frag', 'https://example.com/cb#access_token=[REDACTED:token]'],
    ['token', 'refresh_token: fake.refresh.token.42', 'refresh_token: [REDACTED:token]'],
    ['token', 'authToken: "fake-token-123",', 'authToken: "[REDACTED:token]",'],
    ['api-key', 'X-Api-Key: fake-api-key-123', 'X-Api-Key: [REDACTED:api-key]'],
    ['api-key', 'apikey=fake-api-key-123', 'apikey=[REDACTED:api-key]'],
    ['api-key', 'api_key = "fake-api-key-123"', 'api_key = "[REDACTED:api-key]"'],
    ['access-key', 'ACCESS_KEY=fake-access-key-123', 'ACCESS_KEY=[REDACTED:access-key]'],
    ['private-key', 'PRIVATE_KEY="0xfakefakefake0123456789"', 'PRIVATE_KEY="[REDACTED:private-key]"'],
    [HIGH_ENTROPY_RULE, `2024-05-01 INFO using credential ${keys.random} for upload`, `2024-05-01 INFO using credential [REDACTED:${HIGH_ENTROPY_RULE}] for upload`],
    [HIGH_ENTROPY_RULE, `GET /api/v1/shares/${keys.random}/download 200`, `GET /api/v1/shares/[REDACTED:${HIGH_ENTROPY_RULE}]/download 200`],
  ])('%s: %s', (rule, text, expected) => {
    const result = redact(text);
    expect(result.text).toBe(expected);
    expect(result.found).toEqual([{ rule, count: 1 }]);
  });

  it("redacts a provider's 401 body that echoes the API key", () => {
    const body = JSON.stringify({
      error: {
        message: `Incorrect API key provided: ${keys.openaiProject}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    });
    const result = redact(`401 Unauthorized: ${body}`);
    expect(result.text).not.toContain(keys.openaiProject);
    expect(result.text).toContain('Incorrect API key provided: [REDACTED:openai-key]. You can find your API key at https://platform.openai.com/account/api-keys.');
    expect(result.text).toContain('"code":"invalid_api_key"');
    expect(result.found).toEqual([{ rule: 'openai-key', count: 1 }]);
  });

  it('keeps the ids of provider objects and requests in an error body', () => {
    const body = `500 {"error":{"message":"The server had an error processing your request (request ID req_${fake(alnum, 24)}). Job ftjob-${fake(alnum, 24)} failed.","type":"server_error"}}`;
    expect(redact(body)).toEqual({ text: body, found: [] });
  });

  it('redacts nearly every random token of 24 characters or more that no rule knows', () => {
    const share = (length: number, alphabet: string) => {
      const tokens = Array.from({ length: 500 }, () => fake(alphabet, length));
      return tokens.filter((token) => redact(`value ${token} end`).text === `value [REDACTED:${HIGH_ENTROPY_RULE}] end`).length / tokens.length;
    };
    // Random tokens that happen to miss a character class or read like words are kept: about 4% at 24 characters, under 1% from 40.
    expect(share(24, base64url)).toBeGreaterThan(0.93);
    expect(share(32, base64)).toBeGreaterThan(0.96);
    expect(share(40, alnum)).toBeGreaterThan(0.98);
    expect(share(64, base64)).toBeGreaterThan(0.99);
  });

  it('keeps scheme, user, host and path of a connection string', () => {
    expect(redactText('connecting to postgresql+psycopg://ratchet:Tr0ub4dor&3@db.internal:5432/ratchet?sslmode=require failed')).toBe(
      'connecting to postgresql+psycopg://ratchet:[REDACTED:url-password]@db.internal:5432/ratchet?sslmode=require failed',
    );
    expect(redactText('mongodb+srv://svc:pa55word@cluster0.example.net/app')).toBe('mongodb+srv://svc:[REDACTED:url-password]@cluster0.example.net/app');
  });

  it('replaces a PEM private key block whole, in plain text, YAML and JSON strings, with or without its end line', () => {
    expect(redact(`key file:\n${pem}\ndone`)).toEqual({ text: 'key file:\n[REDACTED:private-key]\ndone', found: [{ rule: 'private-key', count: 1 }] });
    const indented = pem.replaceAll('\n', '\n  ');
    expect(redactText(`tls:\n  key: |\n  ${indented}\n  cert: x`)).toBe('tls:\n  key: |\n  [REDACTED:private-key]\n  cert: x');
    expect(redactText(JSON.stringify({ private_key: `${pem.replace('RSA ', '')}\n` }))).toBe('{"private_key":"[REDACTED:private-key]\\n"}');
    const truncated = pem.split('\n').slice(0, 6).join('\n');
    expect(redactText(`${truncated}\n... (output truncated)`)).toBe('[REDACTED:private-key]\n... (output truncated)');
    expect(redactText('-----BEGIN PUBLIC KEY-----')).toBe('-----BEGIN PUBLIC KEY-----');
  });

  it('names the most specific rule and counts each rule once per secret', () => {
    const text = [`OPENAI_API_KEY=${keys.openaiProject}`, `api_key=${keys.openaiLegacy}`, 'password: hunter2', `Authorization: Bearer ${keys.jwt}`].join('\n');
    const result = redact(text);
    expect(result.text).toBe(['OPENAI_API_KEY=[REDACTED:openai-key]', 'api_key=[REDACTED:openai-key]', 'password: [REDACTED:password]', 'Authorization: Bearer [REDACTED:jwt]'].join('\n'));
    expect(result.found).toEqual([
      { rule: 'jwt', count: 1 },
      { rule: 'openai-key', count: 2 },
      { rule: 'password', count: 1 },
    ]);
  });

  it('is idempotent: redacting the result again changes nothing and finds nothing', () => {
    const everything = [...Object.values(keys).map((key) => `value ${key} end`), pem, 'password: hunter2', 'token=abc123', 'postgres://a:b@c/d', `Authorization: Basic ${keys.bearer}`].join('\n');
    const once = redact(everything);
    expect(once.found.length).toBeGreaterThan(5);
    const twice = redact(once.text);
    expect(twice.text).toBe(once.text);
    expect(twice.found).toEqual([]);
    for (const key of Object.values(keys)) expect(once.text).not.toContain(key);
  });

  it.each([
    ['a reference to a secret', 'password: ${DB_PASSWORD}\ntoken=$GITHUB_TOKEN\napi_key: "{{ api_key }}"\nsecret: <your-secret>'],
    ['no value', 'token=None\npassword: null\napi_key: ""\nsecret = ***'],
    ['a variable passed on', 'connect(password=password)\nlogin(user, password=pw, remember=True)\n    password=password,\n  token: token,'],
    ['a type annotation', 'token: str\npassword: string;\napi_key: SecretStr\n  secret: string | undefined;'],
    ['an expression', '  password: z.string().min(8),\n  token: accessToken,\nsecret = settings.secret_key\napiKey: process.env.API_KEY ?? "",\ntoken = tokens[0]'],
    ['a file path', 'private_key: ~/.ssh/id_ed25519\nPASSWORD_FILE=/run/secrets/db_password'],
    ["a tokenizer's special tokens", 'tokenizer.pad_token = "[PAD]"\neos_token = "</s>"\nbos_token: "<s>"'],
    ['keys that only contain a keyword', 'max_tokens=512\npassword_hash: "$2b$12$abc"\ntoken_type: bearer\nsecret_name: db-credentials'],
  ])('leaves %s alone', (_what, text) => {
    expect(redact(text)).toEqual({ text, found: [] });
  });
});

// Realistic text that flows into lessons and task events: code, test output,
// stack traces, ids and paths. None of it holds a secret; all of it must
// come through untouched.
const sriHash = `sha512-${fake(base64, 86)}==`;
const benignCorpus: readonly string[] = [
  // Python handling passwords and tokens without holding any
  `from fastapi import Depends, HTTPException
from app.security import check_password, create_token

def login(username: str, password: str) -> dict[str, str]:
    user = users.find(username)
    if user is None or not check_password(password, user.password_hash):
        raise HTTPException(status_code=401, detail="invalid credentials")
    token = create_token(user.id, ttl=timedelta(minutes=30))
    return {"access_token": token, "token_type": "bearer"}`,
  // TypeScript schema and interface
  `export const loginSchema = z.object({
  username: z.string().min(1),
  password: z.string().min(8),
  rememberMe: z.boolean().default(false),
});

export interface Credentials {
  readonly username: string;
  readonly password: string;
  token?: string;
}`,
  // Python dataclass and settings from the environment
  `@dataclass(frozen=True)
class Settings:
    api_key: SecretStr
    token: str
    password: Optional[str] = None

API_KEY = os.environ["OPENAI_API_KEY"]
token = os.getenv("GITHUB_TOKEN", "")
SECRET_KEY = env("DJANGO_SECRET_KEY")`,
  // pytest failure
  `============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0
rootdir: /tmp/ratchet-ws-3f9a2c
collected 12 items

tests/test_auth.py ..F.                                                  [ 33%]
tests/test_tokens.py ........                                            [100%]

=================================== FAILURES ===================================
__________________________ test_refresh_token_expired __________________________

    def test_refresh_token_expired():
        token = issue_token(user_id=42, ttl=timedelta(seconds=-1))
>       assert refresh(token) is None
E       AssertionError: assert <Token user_id=42 expires_at=2024-05-01T12:00:00Z> is None
E        +  where <Token user_id=42 expires_at=2024-05-01T12:00:00Z> = refresh(<Token user_id=42>)

tests/test_auth.py:57: AssertionError
=========================== short test summary info ============================
FAILED tests/test_auth.py::test_refresh_token_expired - AssertionError: assert <Token...
========================= 1 failed, 11 passed in 0.42s =========================`,
  // pytest assertion diff with long names
  `E       AssertionError: assert {'status': 'active', 'user_id': 7} == {'status': 'disabled', 'user_id': 7}
E         Differing items:
E         {'status': 'active'} != {'status': 'disabled'}
E         Full diff:
E         - {'status': 'disabled', 'user_id': 7}
E         + {'status': 'active', 'user_id': 7}
tests/integration/test_user_lifecycle_with_password_reset.py::TestUserLifecycle::test_disable_after_failed_password_attempts FAILED`,
  // Python traceback
  `Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/requests/adapters.py", line 486, in send
    resp = conn.urlopen(
  File "/home/runner/.local/lib/python3.11/site-packages/urllib3/connectionpool.py", line 799, in urlopen
    retries = retries.increment(
urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='api.example.com', port=443): Max retries exceeded with url: /v1/tokens/refresh (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a2c1d5e50>: Failed to establish a new connection: [Errno 111] Connection refused'))`,
  // Node stack trace
  `TypeError: Cannot read properties of undefined (reading 'accessToken')
    at AuthService.refresh (/home/runner/work/api/api/src/auth/auth.service.ts:88:31)
    at async TokenController.refresh (/home/runner/work/api/api/src/auth/token.controller.ts:41:12)
    at async /home/runner/work/api/api/node_modules/@nestjs/core/router/router-execution-context.js:46:28
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)`,
  // Java stack trace
  `io.jsonwebtoken.ExpiredJwtException: JWT expired at 2024-05-01T12:00:00Z. Current time: 2024-05-01T12:05:13Z
	at io.jsonwebtoken.impl.DefaultJwtParser.parse(DefaultJwtParser.java:427)
	at com.example.auth.JwtTokenProvider.validateToken(JwtTokenProvider.java:87)
	at org.springframework.security.web.authentication.AbstractAuthenticationProcessingFilter.doFilter(AbstractAuthenticationProcessingFilter.java:223)
	at org.springframework.aop.framework.AbstractSingletonProxyFactoryBean.getObject(AbstractSingletonProxyFactoryBean.java:120)`,
  // Jest failure
  ` FAIL  src/auth/token.spec.ts
  ● TokenService › rejects an expired token

    expect(received).rejects.toThrow(expected)

    Expected substring: "jwt expired"
    Received message:   "invalid signature"

      12 |   it('rejects an expired token', async () => {
    > 13 |     await expect(service.verify(expiredToken)).rejects.toThrow('jwt expired');
         |                                                        ^
      at Object.toThrow (node_modules/expect/build/index.js:218:22)
      at Object.<anonymous> (src/auth/token.spec.ts:13:56)`,
  // git log with full SHAs
  `commit 9fceb02d0ae598e95dc970b74767f19372d61af8
Author: Jane Doe <jane@example.com>
Date:   Tue Apr 2 10:14:07 2024 +0200

    Rotate the session token on login

commit 3b18e512dba79e4c8300dd08aeb37f8e728b8dad
Merge: 1a2b3c4 5d6e7f8
Author: CI Bot <ci@example.com>`,
  // git diff header
  `diff --git a/src/auth/password.py b/src/auth/password.py
index 83db48f..f735c3e 100644
--- a/src/auth/password.py
+++ b/src/auth/password.py
@@ -12,7 +12,7 @@ def hash_password(password: str) -> str:
-    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10))
+    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=12))`,
  // UUIDs and ULIDs in JSON and logs
  `{"id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "taskId": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "traceId": "4bf92f3577b34da6a3ce929d0e0e4736"}
2024-05-01T12:00:03.412Z INFO request_id=01HXYZ8K3M9Q2R7T5V4W6X8Y0Z method=POST path=/v1/tokens status=401 duration_ms=12`,
  // hex digests in test output
  `sha256(dist/app.tar.gz) = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
E       AssertionError: digest mismatch: expected d41d8cd98f00b204e9800998ecf8427e, got 9e107d9d372bb6826bd81d3542a419d6
Digest: sha256:4b8f3b1a9c2e7d6f5a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f`,
  // file paths
  `src/components/UserProfile/AvatarUploadDialog.tsx
services/orchestrator/src/domain/task-state-machine.ts
/usr/lib/x86_64-linux-gnu/libssl.so.3
C:\\Users\\runneradmin\\AppData\\Local\\Temp\\pytest-of-runneradmin\\pytest-0\\test_export0\\out.csv
/home/runner/work/MyProject2/src/test/java/com/example/demo/DemoApplicationTests.java`,
  // package-lock entry with an integrity hash
  `"node_modules/zod": {
  "version": "4.0.5",
  "resolved": "https://registry.npmjs.org/zod/-/zod-4.0.5.tgz",
  "integrity": "${sriHash}",
  "license": "MIT"
}`,
  // base64 of small data
  `const encoded = Buffer.from('hello world, this is a test').toString('base64'); // aGVsbG8gd29ybGQsIHRoaXMgaXMgYSB0ZXN0
assert b64encode(b"ratchet stores lessons learnt") == b"cmF0Y2hldCBzdG9yZXMgbGVzc29ucyBsZWFybnQ="`,
  // a data URI of a one-pixel PNG
  `<img alt="dot" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">`,
  // long identifiers
  `class HTTPServerErrorHandler2Factory extends AbstractSingletonProxyFactoryBean {}
def test_user_can_reset_password_with_valid_token_2(client, mailbox): ...
export async function getServerSideProps2ForDashboardPage(context: GetServerSidePropsContext) {}
const XMLHttpRequestEventTarget2 = window.XMLHttpRequestEventTarget;
k8sClusterRoleBindingV1beta1List TestIntegration_S3Upload_Retry5xx useQueryClient/QueryClientProvider2`,
  // a lexer
  `function nextToken(lexer: Lexer): Token {
  const token = lexer.peek();
  if (token.kind === TokenKind.String) return lexer.advance();
  tokens.push(token);
  return token;
}`,
  // Go
  `token, err := auth.NewToken(ctx, userID)
if err != nil {
	return fmt.Errorf("issue token for %s: %w", userID, err)
}
secret := os.Getenv("WEBHOOK_SECRET")`,
  // shell using secrets by reference
  `export PATH="$HOME/.local/bin:$PATH"
curl -fsSL -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/repos/acme/widgets/releases/latest
docker login ghcr.io -u "$GITHUB_ACTOR" --password-stdin <<< "$CR_PAT"`,
  // GitHub Actions workflow
  `jobs:
  test:
    runs-on: ubuntu-latest
    env:
      GITHUB_TOKEN: \${{ secrets.GITHUB_TOKEN }}
      NODE_ENV: test
    steps:
      - uses: actions/checkout@b4ffde65f46336ab88eb53be808477a3936bae11 # v4.1.1
      - run: npm ci && npm test`,
  // Kubernetes manifest referring to a secret
  `env:
  - name: DB_PASSWORD
    valueFrom:
      secretKeyRef:
        name: db-credentials
        key: password
  - name: POSTGRES_PASSWORD_FILE
    value: /run/secrets/db_password`,
  // Django settings
  `AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]
SESSION_COOKIE_SECURE = True`,
  // SQL
  `CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  password_hash text NOT NULL,
  api_key_prefix varchar(8),
  created_at timestamptz NOT NULL DEFAULT now()
);`,
  // Rust compiler error
  `error[E0382]: borrow of moved value: \`token\`
  --> src/session.rs:42:20
   |
40 |     let token = issue(&user);
   |         ----- move occurs because \`token\` has type \`Token\`, which does not implement the \`Copy\` trait
41 |     store(token);
   |           ----- value moved here
42 |     println!("{}", token.expires_at);
   |                    ^^^^^^^^^^^^^^^^ value borrowed here after move`,
  // npm error
  `npm ERR! code E401
npm ERR! Unable to authenticate, need: Basic realm="GitHub Package Registry"
npm ERR! A complete log of this run can be found in: /root/.npm/_logs/2024-05-01T12_00_00_000Z-debug-0.log`,
  // webpack output with content hashes
  `asset main.3f2a9b8c1d4e5f60.js 245 KiB [emitted] [immutable] [minimized] (name: main)
asset vendors-node_modules_react-dom_index_js.8c1d4e5f60a7b9c2.js 130 KiB [emitted] [immutable]
webpack 5.91.0 compiled successfully in 4132 ms`,
  // README prose
  `## Configuration

Set \`OPENAI_API_KEY\` in your environment. The token is read from \`~/.config/ratchet/token\` when the
variable is unset; a password is never written to disk. See docs/security.md#secrets for rotation.`,
  // a minified-ish JS bundle line
  `!function(e,t){"object"==typeof exports&&"undefined"!=typeof module?module.exports=t():"function"==typeof define&&define.amd?define(t):(e=e||self).Token=t()}(this,function(){"use strict";return{parse:function(n){return n.split(".")}}});`,
  // TypeScript's message catalogue: snake_case words and a number
  `{
  "Add_missing_parameter_to_0_95188": "Add missing parameter to '{0}'",
  "Change_spelling_to_0_90022": "Change spelling to '{0}'",
  "Convert_to_ES_module_95017": "Convert to ES module",
  "File_0_is_not_a_module_2306": "File '{0}' is not a module."
}`,
  // TypeScript compile errors
  `src/auth/session.ts(14,7): error TS2322: Type 'string | undefined' is not assignable to type 'string'.
  Type 'undefined' is not assignable to type 'string'.
src/auth/session.ts(31,18): error TS2339: Property 'refreshToken' does not exist on type 'SessionState'.`,
];

describe('the benign corpus', () => {
  it('holds about thirty realistic snippets', () => {
    expect(benignCorpus.length).toBeGreaterThanOrEqual(30);
  });

  it.each(benignCorpus.map((snippet) => [snippet.split('\n')[0] ?? '', snippet]))('comes through untouched: %s', (_first, snippet) => {
    expect(createRedactor().redact(snippet)).toEqual({ text: snippet, found: [] });
  });
});

describe('loadRedactionRules', () => {
  const directories: string[] = [];
  const configDir = (yaml?: string) => {
    const directory = mkdtempSync(path.join(tmpdir(), 'ratchet-redaction-'));
    directories.push(directory);
    if (yaml !== undefined) writeFileSync(path.join(directory, 'redaction.yaml'), yaml);
    return directory;
  };
  afterAll(() => {
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  it('reads config/redaction.yaml, which writes out the built-in defaults', () => {
    expect(loadRedactionRules(path.resolve(__dirname, '../../../config'))).toEqual(defaultRedactionRules);
  });

  it('uses the built-in rules without the file, and for keys the file leaves out', () => {
    expect(loadRedactionRules(configDir())).toBe(defaultRedactionRules);
    const rules = loadRedactionRules(configDir('entropy:\n  minLength: 32\n'));
    expect(rules.rules).toEqual(defaultRedactionRules.rules);
    expect(rules.entropy).toEqual({ ...defaultRedactionRules.entropy, minLength: 32 });
    expect(Object.isFrozen(rules.entropy)).toBe(true);
  });

  it('applies rules, thresholds and the allowlist from the file', () => {
    const rules = loadRedactionRules(
      configDir(`rules:
  - id: internal-token
    pattern: 'itk_(?<secret>[a-z0-9]{12})'
  - id: pin
    key: 'pin'
entropy:
  enabled: false
allowlist:
  - '^itk_'
  - '^0000$'
`),
    );
    const redactor = createRedactor(rules);
    expect(redactor.redact(`itk_abcdef123456 pin=4321 pin=0000 ${keys.random}`)).toEqual({
      text: `itk_[REDACTED:internal-token] pin=[REDACTED:pin] pin=0000 ${keys.random}`,
      found: [
        { rule: 'internal-token', count: 1 },
        { rule: 'pin', count: 1 },
      ],
    });
  });

  it.each([
    ['a YAML syntax error, with its line', 'rules:\n  - id: x\n   pattern: [', /redaction\.yaml is invalid: line \d+:\d+: YAML syntax error/],
    ['a pattern that does not compile', "rules:\n  - id: broken\n    pattern: 'sk-(['\n", /redaction\.yaml is invalid: rules\.0\.pattern: is not a valid regular expression/],
    ['a pattern that matches nothing but the empty string', "rules:\n  - id: empty\n    pattern: 'x*'\n", /rules\.0\.pattern: matches the empty string/],
    ['a rule with both pattern and key', "rules:\n  - id: both\n    pattern: 'a'\n    key: 'b'\n", /rules\.0: a rule needs exactly one of pattern/],
    ['an id that is not kebab-case', "rules:\n  - id: Open_AI\n    pattern: 'sk-'\n", /rules\.0\.id: must be kebab-case/],
    ['a duplicate id', "rules:\n  - id: a\n    pattern: 'a1'\n  - id: a\n    pattern: 'a2'\n", /rules\.1\.id: a is used by rule 0/],
    ['the entropy rule id', "rules:\n  - id: high-entropy\n    pattern: 'a1'\n", /rules\.0\.id: is the entropy check's own id/],
    ['a misspelt key', 'entropy:\n  treshold: 0.9\n', /entropy: Unrecognized key: "treshold"/],
    ['a threshold out of range', 'entropy:\n  threshold: 4.5\n', /entropy\.threshold: Too big/],
    ['an allowlist entry that does not compile', "allowlist:\n  - '(unclosed'\n", /allowlist\.0: is not a valid regular expression/],
  ])('rejects %s with CONFIG_INVALID naming the file and key', (_what, yaml, message) => {
    const directory = configDir(yaml);
    let error: unknown;
    try {
      loadRedactionRules(directory);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe(ErrorCode.CONFIG_INVALID);
    expect((error as AppError).message).toContain(path.join(directory, 'redaction.yaml'));
    expect((error as AppError).message).toMatch(message);
  });
});

describe('configured secrets, by value', () => {
  // Shapes no rule knows: only their value gives them away.
  const plain = 'correct-horse-battery-staple';
  const natsPassword = 'Qpasswordwithoutdigits';

  it('replaces every configured secret wherever it appears, before any rule, and leaves short ones alone', () => {
    const redactor = createRedactor(defaultRedactionRules, { values: [plain, natsPassword, 'short'] });
    const result = redactor.redact(`auth failed for ${plain}; retry with ${natsPassword}${plain} (a short word stays)`);
    expect(result.text).toBe(`auth failed for [REDACTED:${CONFIGURED_SECRET_RULE}]; retry with [REDACTED:${CONFIGURED_SECRET_RULE}][REDACTED:${CONFIGURED_SECRET_RULE}] (a short word stays)`);
    expect(result.found).toEqual([{ rule: CONFIGURED_SECRET_RULE, count: 3 }]);
    expect(redactor.redact(result.text).text).toBe(result.text);
    expect(createRedactor(defaultRedactionRules).redact(`key ${plain}`).text).toBe(`key ${plain}`);
  });

  it('takes a value with regular-expression characters literally', () => {
    const odd = 'a.b*c+d?(e)[f]{g}|h^i$j\\k';
    expect(createRedactor(defaultRedactionRules, { values: [odd] }).redact(`x ${odd} y aXbXcXd`).text).toBe(`x [REDACTED:${CONFIGURED_SECRET_RULE}] y aXbXcXd`);
  });

  it('finds secrets in settings and RATCHET_ variables by their names, not counts or file names', () => {
    const config = { model: { apiKey: plain, maxTokens: 4096, roles: { coder: { apiKey: 'coder-key-value' } } }, grpc: { tokens: 'first-token-1, second-token-2', certFile: '/etc/cert.pem' }, bus: { natsPassword } };
    const env = { RATCHET_NATS_PASSWORD_CODER: 'Ncoderpassword', RATCHET_TOKEN: 'cli-token-value', RATCHET_GRPC_USERS_FILE: '/etc/users.yaml', RATCHET_MODEL_MAX_TOKENS: '100000000', HOME_TOKEN: 'not-ours-value' };
    expect(configuredSecrets(config, env).sort()).toEqual([plain, 'Ncoderpassword', natsPassword, 'cli-token-value', 'coder-key-value', 'first-token-1', 'second-token-2'].sort());
  });
});

describe('redactStrings', () => {
  const redact = (text: string) => text.replaceAll('s3cret-value', '[REDACTED:configured-secret]');

  it('redacts every string at any depth, but not code, ids or a command to approve', () => {
    const at = new Date('2026-11-25T00:00:00Z');
    const input = {
      kind: 'tests-failed',
      at,
      output: 'FAILED: token s3cret-value',
      report: { cases: [{ name: 'test s3cret-value', failure: { message: 'got s3cret-value' } }] },
      files: [{ path: 'app.py', content: 'KEY = "s3cret-value"' }],
      taskId: 's3cret-value-task',
      lessonIds: ['s3cret-value-1'],
      commandLine: 'curl -H s3cret-value',
      bytes: new Uint8Array([1, 2]),
      count: 3,
    };
    const clean = redactStrings(input, redact);
    expect(clean).toEqual({
      ...input,
      output: 'FAILED: token [REDACTED:configured-secret]',
      report: { cases: [{ name: 'test [REDACTED:configured-secret]', failure: { message: 'got [REDACTED:configured-secret]' } }] },
    });
    expect(clean.at).toBe(at);
    expect(input.output).toBe('FAILED: token s3cret-value');
  });
});
