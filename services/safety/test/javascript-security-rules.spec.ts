import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { analyzeFiles, loadParsers, RuleId, Verdict, type Parsers } from '../src';

let parsers: Parsers;
beforeAll(async () => {
  parsers = await loadParsers();
});
afterAll(() => parsers.close());

const check = (path: string, content: string) => analyzeFiles(parsers, [{ path, content }]);

type Case = [name: string, path: string, code: string];

/** Each rule: code it must flag, and look-alike ordinary code it must leave alone. */
const rules: [rule: RuleId, verdict: Verdict, flagged: Case[], allowed: Case[]][] = [
  [
    RuleId.JS_TLS_NO_VERIFY,
    Verdict.BLOCK,
    [
      ['an https.Agent with rejectUnauthorized: false', 'a.ts', "import https from 'node:https';\nconst agent = new https.Agent({ rejectUnauthorized: false });"],
      ['tls.connect options', 'a.js', "const tls = require('tls');\ntls.connect(443, host, { 'rejectUnauthorized': false });"],
      ['NODE_TLS_REJECT_UNAUTHORIZED = "0"', 'a.js', "process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';"],
      ['NODE_TLS_REJECT_UNAUTHORIZED through a subscript', 'a.ts', "process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = '0';"],
      ['an assignment to rejectUnauthorized', 'a.js', 'options.rejectUnauthorized = false;'],
    ],
    [
      ['rejectUnauthorized: true and a CA', 'a.ts', "import https from 'node:https';\nconst agent = new https.Agent({ rejectUnauthorized: true, ca: caPem });"],
      ['reading the variable', 'a.js', "if (process.env.NODE_TLS_REJECT_UNAUTHORIZED === '0') console.warn('insecure');"],
    ],
  ],
  [
    RuleId.JS_WEAK_CIPHER,
    Verdict.BLOCK,
    [
      ['DES-EDE3', 'a.ts', "import crypto from 'node:crypto';\nconst c = crypto.createCipheriv('des-ede3-cbc', key, iv);"],
      ['RC4 imported by name', 'a.js', "const { createCipheriv } = require('crypto');\nconst c = createCipheriv('rc4', key, '');"],
      ['AES in ECB mode', 'a.ts', "import { createDecipheriv } from 'crypto';\nconst d = createDecipheriv('aes-128-ecb', key, null);"],
      ['createCipher (no IV)', 'a.js', "const crypto = require('crypto');\nconst c = crypto.createCipher('aes-256-cbc', password);"],
      ['an algorithm in a constant', 'a.ts', "import crypto from 'crypto';\nconst ALGORITHM = 'bf-cbc';\ncrypto.createCipheriv(ALGORITHM, key, iv);"],
    ],
    [['AES-256-GCM', 'a.ts', "import crypto from 'node:crypto';\nconst c = crypto.createCipheriv('aes-256-gcm', key, iv);"]],
  ],
  [
    RuleId.JS_WEAK_HASH_SECURITY,
    Verdict.BLOCK,
    [
      ['md5 of a password', 'a.ts', "import crypto from 'node:crypto';\nconst stored = crypto.createHash('md5').update(password).digest('hex');"],
      ['sha1 in a function that hashes passwords', 'a.js', "const crypto = require('crypto');\nfunction hashPassword(pw) {\n  return crypto.createHash('sha1').update(pw).digest('hex');\n}"],
      ['md5 stored as a token', 'a.ts', "import { createHash } from 'crypto';\nconst resetToken = createHash('md5').update(email + Date.now()).digest('hex');"],
    ],
    [['sha256 of a password (another weakness, not this rule)', 'a.ts', "import crypto from 'node:crypto';\nconst stored = crypto.createHash('sha256').update(password).digest('hex');"]],
  ],
  [
    RuleId.JS_WEAK_HASH,
    Verdict.WARN,
    [['an md5 ETag', 'a.ts', "import crypto from 'node:crypto';\nconst etag = crypto.createHash('md5').update(body).digest('hex');"]],
    [['a sha256 checksum', 'a.js', "const crypto = require('crypto');\nconst sum = crypto.createHash('sha256').update(data).digest('hex');"]],
  ],
  [
    RuleId.JS_WEAK_KEY,
    Verdict.BLOCK,
    [
      ['a 1024-bit RSA key', 'a.ts', "import { generateKeyPairSync } from 'node:crypto';\nconst keys = generateKeyPairSync('rsa', { modulusLength: 1024 });"],
      ['a 512-bit DSA key, async', 'a.js', "const crypto = require('crypto');\ncrypto.generateKeyPair('dsa', { modulusLength: 512 }, done);"],
    ],
    [
      ['a 2048-bit RSA key', 'a.ts', "import { generateKeyPairSync } from 'node:crypto';\nconst keys = generateKeyPairSync('rsa', { modulusLength: 2048 });"],
      ['an Ed25519 key', 'a.js', "const crypto = require('crypto');\ncrypto.generateKeyPairSync('ed25519');"],
    ],
  ],
  [
    RuleId.JS_SQL_STRING_FORMAT,
    Verdict.BLOCK,
    [
      ['a template string in query()', 'a.ts', "export async function find(db: Db, id: string) {\n  return db.query(`SELECT * FROM users WHERE id = '${id}'`);\n}"],
      ['concatenation in execute()', 'a.js', "async function find(conn, name) {\n  return conn.execute('SELECT * FROM users WHERE name = ' + name);\n}"],
      ['a query kept in a constant first', 'a.ts', "export function remove(db: Db, id: string) {\n  const sql = `DELETE FROM items WHERE id = ${id}`;\n  return db.run(sql);\n}"],
      ['better-sqlite3 prepare', 'a.js', 'const row = db.prepare(`SELECT * FROM t WHERE name = "${name}"`).get();'],
    ],
    [
      ['parameters', 'a.ts', "export function find(db: Db, id: string) {\n  return db.query('SELECT * FROM users WHERE id = $1', [id]);\n}"],
      ['a tagged template (parameterised by the library)', 'a.ts', 'const rows = await sql`SELECT * FROM users WHERE id = ${id}`;'],
      ['a constant table name and a placeholder list', 'a.js', "const TABLE = 'users';\nconst marks = ids.map(() => '?').join(', ');\ndb.all(`SELECT * FROM ${TABLE} WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);"],
      ['a number', 'a.ts', 'db.query(`SELECT * FROM t LIMIT ${Number(limit)}`);'],
      ['a template that is not SQL', 'a.js', 'map.get(`user:${id}`);\nrouter.get(`/users/${id}`, handler);'],
    ],
  ],
];

describe.each(rules)('%s', (rule, verdict, flagged, allowed) => {
  it.each(flagged)(`flags %s (${verdict})`, (_name, path, code) => {
    const result = check(path, code);
    expect(result.findings.map((found) => found.ruleId)).toContain(rule);
    expect(result.findings.filter((found) => found.ruleId === rule).every((found) => found.action === verdict && /^CWE-\d+$/.test(found.cwe))).toBe(true);
  });

  it.each(allowed)('allows %s', (_name, path, code) => {
    expect(check(path, code).findings.map((found) => found.ruleId)).not.toContain(rule);
  });
});
