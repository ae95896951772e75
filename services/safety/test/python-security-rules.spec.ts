import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { analyzeFiles, loadParsers, RuleId, Verdict, type Parsers } from '../src';

let parsers: Parsers;
beforeAll(async () => {
  parsers = await loadParsers();
});
afterAll(() => parsers.close());

const check = (content: string, path = 'app.py') => analyzeFiles(parsers, [{ path, content }]);
const rulesOf = (content: string, path = 'app.py') => check(content, path).findings.map((found) => found.ruleId);

type Case = [name: string, code: string];

/** Each rule: code it must flag (and nothing else), and look-alike ordinary code it must leave alone. */
const rules: [rule: RuleId, verdict: Verdict, flagged: Case[], allowed: Case[]][] = [
  [
    RuleId.PYTHON_TAR_EXTRACT_ALL,
    Verdict.BLOCK,
    [
      ['extractall of a downloaded archive', "import tarfile\nwith tarfile.open('download.tar.gz') as archive:\n    archive.extractall('plugins')"],
      ['from tarfile import open', 'from tarfile import open as open_tar\nopen_tar(path).extractall(dest)'],
    ],
    [
      ["filter='data'", "import tarfile\nwith tarfile.open(path) as archive:\n    archive.extractall(dest, filter='data')"],
      ['members chosen by the code', 'import tarfile\nwith tarfile.open(path) as archive:\n    archive.extractall(dest, members=safe_members(archive))'],
      ['zipfile, which keeps names inside the target', "import zipfile\nwith zipfile.ZipFile(path) as archive:\n    archive.extractall('out')"],
    ],
  ],
  [
    RuleId.PYTHON_WEAK_HASH_SECURITY,
    Verdict.BLOCK,
    [
      ['md5 of a password', 'import hashlib\nstored = hashlib.md5(password.encode()).hexdigest()'],
      ['sha1 in a function that hashes passwords', 'import hashlib\ndef hash_password(pw):\n    return hashlib.sha1(pw.encode()).hexdigest()'],
      ['hashlib.new("md5") into a token', "import hashlib\nauth_token = hashlib.new('md5', seed).hexdigest()"],
      ['an aliased import', 'from hashlib import sha1 as digest\nsignature = digest(body).hexdigest()'],
      ['pycryptodome MD5', 'from Cryptodome.Hash import MD5\nsession_key = MD5.new(data).digest()'],
    ],
    [
      ['sha256 of a password (a different weakness, not this rule)', 'import hashlib\nstored = hashlib.sha256(password.encode()).hexdigest()'],
      ['scrypt', 'import hashlib\nkey = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)'],
      ['md5 marked usedforsecurity=False', 'import hashlib\ntoken_cache = hashlib.md5(data, usedforsecurity=False).hexdigest()'],
      ['an author field (not "auth")', 'import hashlib\nauthor_id = hashlib.sha256(author.encode()).hexdigest()'],
    ],
  ],
  [
    RuleId.PYTHON_WEAK_HASH,
    Verdict.WARN,
    [
      ['md5 of file contents', "import hashlib\nwith open('data.bin', 'rb') as f:\n    checksum = hashlib.md5(f.read()).hexdigest()"],
      ['hashlib.new("sha1")', "import hashlib\ndigest = hashlib.new('sha1', data).hexdigest()"],
    ],
    [
      ['sha256 of file contents', 'import hashlib\nchecksum = hashlib.sha256(data).hexdigest()'],
      ['hashlib.new("sha256")', "import hashlib\nh = hashlib.new('sha256')"],
      ['a method named md5 elsewhere', 'checksum = store.md5(data)'],
    ],
  ],
  [
    RuleId.PYTHON_WEAK_CIPHER,
    Verdict.BLOCK,
    [
      ['pyCrypto-style DES (the import is its own finding)', 'from Cryptodome.Cipher import DES\ncipher = DES.new(key, DES.MODE_CBC, iv)'],
      ['cryptography TripleDES', 'from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes\nc = Cipher(algorithms.TripleDES(key), modes.CBC(iv))'],
      ['cryptography ARC4', 'from cryptography.hazmat.primitives.ciphers import algorithms\nalgo = algorithms.ARC4(key)'],
      ['Blowfish through a module alias', 'import Cryptodome.Cipher.Blowfish as bf\nc = bf.new(key, bf.MODE_CBC)'],
    ],
    [
      ['AES-GCM', 'from cryptography.hazmat.primitives.ciphers.aead import AESGCM\nbox = AESGCM(key).encrypt(nonce, data, None)'],
      ['AES in CBC mode', 'from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes\nc = Cipher(algorithms.AES(key), modes.CBC(iv))'],
    ],
  ],
  [
    RuleId.PYTHON_WEAK_CIPHER_MODE,
    Verdict.WARN,
    [
      ['cryptography ECB', 'from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes\nc = Cipher(algorithms.AES(key), modes.ECB())'],
      ['pycryptodomex MODE_ECB', 'from Cryptodome.Cipher import AES\nc = AES.new(key, AES.MODE_ECB)'],
    ],
    [['MODE_GCM', 'from Cryptodome.Cipher import AES\nc = AES.new(key, AES.MODE_GCM)']],
  ],
  [
    RuleId.PYTHON_WEAK_KEY,
    Verdict.BLOCK,
    [
      ['a 1024-bit RSA key', 'from cryptography.hazmat.primitives.asymmetric import rsa\nk = rsa.generate_private_key(public_exponent=65537, key_size=1024)'],
      ['a 512-bit RSA key given positionally', 'from cryptography.hazmat.primitives.asymmetric import rsa\nk = rsa.generate_private_key(65537, 512)'],
      ['a 1024-bit DSA key', 'from cryptography.hazmat.primitives.asymmetric import dsa\nk = dsa.generate_private_key(key_size=1_024)'],
      ['pycryptodome RSA.generate(1024)', 'from Cryptodome.PublicKey import RSA\nk = RSA.generate(1024)'],
      ['a 192-bit curve', 'from cryptography.hazmat.primitives.asymmetric import ec\nk = ec.generate_private_key(ec.SECP192R1())'],
    ],
    [
      ['a 2048-bit RSA key', 'from cryptography.hazmat.primitives.asymmetric import rsa\nk = rsa.generate_private_key(public_exponent=65537, key_size=2048)'],
      ['P-256', 'from cryptography.hazmat.primitives.asymmetric import ec\nk = ec.generate_private_key(ec.SECP256R1())'],
      ['a key size from configuration', 'from cryptography.hazmat.primitives.asymmetric import rsa\nk = rsa.generate_private_key(public_exponent=65537, key_size=settings.bits)'],
    ],
  ],
  [
    RuleId.PYTHON_TLS_NO_VERIFY,
    Verdict.BLOCK,
    [
      ['requests with verify=False', "import requests\nrequests.get('https://example.com', verify=False)"],
      ['a Session call with verify=False', "import requests\ns = requests.Session()\ns.post(url, json=body, verify=False)"],
      ['httpx.Client(verify=False)', 'import httpx\nclient = httpx.Client(verify=False)'],
      ['an unverified context', 'import ssl\nctx = ssl._create_unverified_context()'],
      ['CERT_NONE', 'import ssl\nctx = ssl.create_default_context()\nctx.verify_mode = ssl.CERT_NONE'],
      ['CERT_NONE imported by name', 'from ssl import CERT_NONE\nctx.verify_mode = CERT_NONE'],
      ['check_hostname = False', 'import ssl\nctx = ssl.create_default_context()\nctx.check_hostname = False'],
      ['session.verify = False', 'import requests\nsession = requests.Session()\nsession.verify = False'],
      ['urllib3 cert_reqs', "import urllib3\npool = urllib3.PoolManager(cert_reqs='CERT_NONE')"],
    ],
    [
      ['requests with a CA bundle', "import requests\nrequests.get(url, verify='/etc/ssl/ca.pem', timeout=10)"],
      ['the default context', 'import ssl\nctx = ssl.create_default_context(cafile=ca)\nctx.verify_mode = ssl.CERT_REQUIRED'],
      ['a verify flag of another API', 'def save(x, verify=True):\n    return x\n\nsave(1, verify=True)'],
    ],
  ],
  [
    RuleId.PYTHON_TLS_OLD_PROTOCOL,
    Verdict.BLOCK,
    [
      ['PROTOCOL_SSLv3', 'import ssl\nsock = ssl.wrap_socket(s, ssl_version=ssl.PROTOCOL_SSLv3)'],
      ['PROTOCOL_TLSv1 in a context', 'import ssl\nctx = ssl.SSLContext(ssl.PROTOCOL_TLSv1)'],
      ['a minimum of TLS 1.0', 'import ssl\nctx = ssl.create_default_context()\nctx.minimum_version = ssl.TLSVersion.TLSv1'],
      ['pyOpenSSL SSLv3_METHOD', 'from OpenSSL import SSL\nctx = SSL.Context(SSL.SSLv3_METHOD)'],
      ['imported by name', 'from ssl import PROTOCOL_TLSv1_1, SSLContext\nctx = SSLContext(PROTOCOL_TLSv1_1)'],
    ],
    [
      ['PROTOCOL_TLS_CLIENT', 'import ssl\nctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)\nctx.minimum_version = ssl.TLSVersion.TLSv1_2'],
      ['an unrelated constant of the same name', 'class Versions:\n    TLSv1 = "1.0"\n\nprint(Versions.TLSv1)'],
    ],
  ],
  [
    RuleId.PYTHON_XML_ENTITIES,
    Verdict.BLOCK,
    [
      ['lxml resolve_entities=True', 'from lxml import etree\nparser = etree.XMLParser(resolve_entities=True)'],
      ['lxml no_network=False', 'from lxml import etree\nparser = etree.XMLParser(no_network=False)'],
      ['SAX external general entities on', 'import xml.sax\nfrom xml.sax.handler import feature_external_ges\np = make()\np.setFeature(feature_external_ges, True)'],
    ],
    [['SAX external entities off', 'from xml.sax.handler import feature_external_ges\np.setFeature(feature_external_ges, False)']],
  ],
  [
    RuleId.PYTHON_XML_UNSAFE_PARSER,
    Verdict.WARN,
    [
      ['ElementTree.fromstring', 'import xml.etree.ElementTree as ET\nroot = ET.fromstring(text)'],
      ['minidom.parseString', 'from xml.dom import minidom\ndoc = minidom.parseString(data)'],
      ['lxml.etree.parse', 'from lxml import etree\ntree = etree.parse(path)'],
      ['xml.sax.parseString', 'import xml.sax\nxml.sax.parseString(data, handler)'],
    ],
    [
      ['defusedxml', 'import defusedxml.ElementTree as ET\nroot = ET.fromstring(text)'],
      ['building XML, not parsing it', "import xml.etree.ElementTree as ET\nroot = ET.Element('r')\nET.SubElement(root, 'x').text = 'y'\nprint(ET.tostring(root))"],
    ],
  ],
  [
    RuleId.PYTHON_UNSAFE_DESERIALIZATION,
    Verdict.BLOCK,
    [
      ['pickle.loads', 'import pickle\nobj = pickle.loads(data)'],
      ['pickle.load of a file', "import pickle\nwith open('state.pkl', 'rb') as f:\n    state = pickle.load(f)"],
      ['an aliased cPickle', 'import _pickle as cp\nobj = cp.loads(blob)'],
      ['from pickle import loads', 'from pickle import loads\nobj = loads(blob)'],
      ['pickle.Unpickler', 'import pickle\nobj = pickle.Unpickler(f).load()'],
      ['marshal.loads', 'import marshal\ncode = marshal.loads(blob)'],
      ['shelve.open', "import shelve\ndb = shelve.open('cache')"],
      ['yaml.load without a Loader', 'import yaml\ncfg = yaml.load(text)'],
      ['yaml.load with the unsafe Loader', 'import yaml\ncfg = yaml.load(text, Loader=yaml.Loader)'],
      ['yaml.unsafe_load', 'import yaml\ncfg = yaml.unsafe_load(text)'],
      ['jsonpickle.decode', 'import jsonpickle\nobj = jsonpickle.decode(text)'],
      ['pandas.read_pickle', "import pandas as pd\ndf = pd.read_pickle('frame.pkl')"],
      ['dill.loads', 'import dill\nf = dill.loads(blob)'],
    ],
    [
      ['pickle.dumps', "import pickle\nblob = pickle.dumps(obj)\nwith open('x.pkl', 'wb') as f:\n    pickle.dump(obj, f)"],
      ['yaml.safe_load', 'import yaml\ncfg = yaml.safe_load(text)'],
      ['yaml.load with SafeLoader', 'import yaml\ncfg = yaml.load(text, Loader=yaml.SafeLoader)'],
      ['json.loads', 'import json\ncfg = json.loads(text)'],
      ['a method named loads on another object', 'cfg = toml.loads(text)\nstate = store.load()'],
    ],
  ],
  [
    RuleId.PYTHON_JINJA2_AUTOESCAPE_OFF,
    Verdict.BLOCK,
    [
      ['autoescape=False', "from jinja2 import Environment, FileSystemLoader\nenv = Environment(loader=FileSystemLoader('templates'), autoescape=False)"],
      ['autoescape left unset', "import jinja2\nenv = jinja2.Environment(loader=jinja2.FileSystemLoader('templates'))"],
    ],
    [
      ['select_autoescape', "from jinja2 import Environment, select_autoescape\nenv = Environment(autoescape=select_autoescape(['html']))"],
      ['autoescape=True', 'from jinja2 import Environment\nenv = Environment(autoescape=True)'],
      ['settings passed as **kwargs', 'from jinja2 import Environment\nenv = Environment(**options)'],
    ],
  ],
  [
    RuleId.PYTHON_FLASK_DEBUG,
    Verdict.BLOCK,
    [
      ['app.run(debug=True)', "from flask import Flask\napp = Flask(__name__)\nif __name__ == '__main__':\n    app.run(debug=True)"],
      ['app.debug = True', 'import flask\napp = flask.Flask(__name__)\napp.debug = True'],
    ],
    [
      ['app.run() without debug', "from flask import Flask\napp = Flask(__name__)\napp.run(port=5000)"],
      ['debug from the environment', "import os\nfrom flask import Flask\napp = Flask(__name__)\napp.run(debug=os.environ.get('FLASK_DEBUG') == '1')"],
      ['run(debug=True) without Flask', 'import worker\nworker.run(debug=True)'],
    ],
  ],
  [
    RuleId.PYTHON_SSH_NO_HOST_KEY_CHECK,
    Verdict.BLOCK,
    [
      ['paramiko.AutoAddPolicy()', 'import paramiko\nclient = paramiko.SSHClient()\nclient.set_missing_host_key_policy(paramiko.AutoAddPolicy())'],
      ['WarningPolicy imported by name', 'from paramiko import SSHClient, WarningPolicy\nc = SSHClient()\nc.set_missing_host_key_policy(WarningPolicy)'],
    ],
    [['RejectPolicy with known hosts', 'import paramiko\nc = paramiko.SSHClient()\nc.load_system_host_keys()\nc.set_missing_host_key_policy(paramiko.RejectPolicy())']],
  ],
  [
    RuleId.PYTHON_INSECURE_TEMPFILE,
    Verdict.WARN,
    [
      ['tempfile.mktemp', 'import tempfile\nname = tempfile.mktemp()'],
      ['mktemp imported by name', "from tempfile import mktemp\nname = mktemp(suffix='.txt')"],
    ],
    [
      ['mkstemp, NamedTemporaryFile and TemporaryDirectory', 'import tempfile\nfd, name = tempfile.mkstemp()\nwith tempfile.NamedTemporaryFile() as f, tempfile.TemporaryDirectory() as d:\n    pass'],
    ],
  ],
  [
    RuleId.PYTHON_HARDCODED_PASSWORD,
    Verdict.WARN,
    [
      ['a password assignment', "password = 'hunter2'"],
      ['a secret key in a config class', "class Config:\n    SECRET_KEY = 'dev-key-123'"],
      ['a password keyword argument', "conn = connect(host='db', user='app', password='s3cret!')"],
      ['a default parameter', "def login(user, password='admin123'):\n    return user"],
      ['a comparison', "if password == 'letmein':\n    grant()"],
      ['a dict entry', "settings = {'db_password': 'postgres123'}"],
    ],
    [
      ['a password from the environment', "import os\npassword = os.environ['APP_PASSWORD']"],
      ['the name of a variable', "PASSWORD_VARIABLE = 'APP_PASSWORD'\npassword = 'APP_PASSWORD'"],
      ['an empty password', "password = ''"],
      ['a prompt', "password = input('Password: ')"],
      ['a tokenizer token', "token = 'while'"],
      ['made-up passwords in a test file (ignored there)', "def test_login():\n    assert login('u', password='pw-for-tests')"],
    ],
  ],
  [
    RuleId.PYTHON_SQL_STRING_FORMAT,
    Verdict.BLOCK,
    [
      ['an f-string', "def find(cur, name):\n    cur.execute(f\"SELECT * FROM users WHERE name = '{name}'\")"],
      ['% formatting', 'def find(cur, uid):\n    cur.execute("SELECT * FROM users WHERE id = %s" % uid)'],
      ['str.format', 'def find(cur, uid):\n    cur.execute("DELETE FROM users WHERE id = {}".format(uid))'],
      ['concatenation', "def find(cur, name):\n    cur.execute(\"SELECT id FROM users WHERE name = '\" + name + \"'\")"],
      ['a query built in a variable first', "def find(conn, name):\n    query = 'SELECT * FROM t WHERE name = ' + repr(name)\n    return conn.execute(query).fetchall()"],
      ['a query extended with +=', "def find(cur, name, order):\n    sql = 'SELECT * FROM t WHERE 1 = 1'\n    sql += f' AND name = {name}'\n    cur.execute(sql)"],
      ['executescript', 'def run(db, table):\n    db.executescript(f"DROP TABLE {table}; CREATE TABLE {table} (id INTEGER)")'],
      ['pandas.read_sql', "import pandas as pd\ndef load(conn, day):\n    return pd.read_sql(f\"SELECT * FROM events WHERE day = '{day}'\", conn)"],
    ],
    [
      ['parameters', "def find(cur, name):\n    cur.execute('SELECT * FROM users WHERE name = ?', (name,))"],
      ['a constant table name', "TABLE = 'users'\ndef find(cur, uid):\n    cur.execute(f'SELECT * FROM {TABLE} WHERE id = ?', (uid,))"],
      ['a placeholder list for IN', "def find(cur, ids):\n    marks = ', '.join('?' for _ in ids)\n    cur.execute(f'SELECT * FROM t WHERE id IN ({marks})', ids)"],
      ['a number made with int()', "def page(cur, n):\n    cur.execute(f'SELECT * FROM t LIMIT {int(n)}')"],
      ['formatting text that is not SQL', "def log(cur, name):\n    print(f'execute for {name}')\n    cur.execute('SELECT 1')"],
      ['execute of another kind of object', 'def go(runner, step):\n    runner.execute(f"step {step}")'],
    ],
  ],
  [
    RuleId.PYTHON_BIND_ALL_INTERFACES,
    Verdict.WARN,
    [
      ['a socket bound to 0.0.0.0', "import socket\ns = socket.socket()\ns.bind(('0.0.0.0', 8080))"],
      ['a HOST constant', "HOST = '0.0.0.0'"],
      ['host= of a server', "import uvicorn\nuvicorn.run(app, host='0.0.0.0', port=8000)"],
      ['IPv6 any of a server', "from http.server import HTTPServer\nserver = HTTPServer(('::', 8000), Handler)"],
    ],
    [
      ['localhost', "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 8080))"],
      ['an address in a message', "print('listening on 0.0.0.0 would be wrong')"],
      // sqlparse's lexer: a typecast token, not an IPv6 address.
      ['a "::" token of a parser', "from sqlparse import tokens\nSQL_REGEX = [(r'::', tokens.Punctuation), ('::', tokens.Punctuation)]\nadd_rule(tokens.Punctuation, '::')"],
      ['a "::" separator', "def split(name):\n    return name.split('::')"],
    ],
  ],
  [
    RuleId.PYTHON_CLEARTEXT_PROTOCOL,
    Verdict.BLOCK,
    [
      ['import telnetlib', "import telnetlib\nt = telnetlib.Telnet('router')"],
      ['ftplib.FTP', "import ftplib\nftp = ftplib.FTP('files.example.com')"],
      ['FTP imported by name', "from ftplib import FTP\nftp = FTP('files.example.com')"],
    ],
    [['FTP_TLS', "from ftplib import FTP_TLS\nftp = FTP_TLS('files.example.com')\nftp.prot_p()"]],
  ],
  [
    RuleId.PYTHON_DEPRECATED_CRYPTO,
    Verdict.BLOCK,
    [
      ['import Crypto', 'import Crypto'],
      ['from Crypto.Random import get_random_bytes', 'from Crypto.Random import get_random_bytes\nkey = get_random_bytes(16)'],
    ],
    [['pycryptodomex (Cryptodome)', 'from Cryptodome.Random import get_random_bytes\nkey = get_random_bytes(16)']],
  ],
  [
    RuleId.PYTHON_PERMISSIVE_FILE_MODE,
    Verdict.BLOCK,
    [
      ['os.chmod 0o777', "import os\nos.chmod('run.sh', 0o777)"],
      ['os.chmod 0o666 (world-writable)', "import os\nos.chmod('data.txt', 0o666)"],
      ['a decimal mode', "import os\nos.chmod('x', 511)"],
      ['stat.S_IWOTH', "import os, stat\nos.chmod('x', stat.S_IRUSR | stat.S_IWOTH)"],
      ['Path.chmod', "from pathlib import Path\nPath('out.txt').chmod(0o777)"],
    ],
    [
      ['0o755 and 0o644', "import os\nos.chmod('run.sh', 0o755)\nos.chmod('data.txt', 0o644)"],
      ['Path.chmod 0o700', "from pathlib import Path\nPath('secret').chmod(0o700)"],
    ],
  ],
];

describe.each(rules)('%s', (rule, verdict, flagged, allowed) => {
  it.each(flagged)(`flags %s (${verdict})`, (_name, code) => {
    const result = check(code);
    expect(result.findings.map((found) => found.ruleId)).toContain(rule);
    expect(result.findings.filter((found) => found.ruleId === rule).every((found) => found.action === verdict)).toBe(true);
    expect(result.findings.filter((found) => found.ruleId === rule).every((found) => found.tool === 'ratchet' && /^CWE-\d+$/.test(found.cwe))).toBe(true);
  });

  it.each(allowed)('allows %s', (name, code) => {
    const path = name.includes('test file') ? 'tests/test_login.py' : 'app.py';
    expect(rulesOf(code, path)).not.toContain(rule);
  });
});

describe('py.dynamic-eval and py.eval-built-string', () => {
  it('warns, without blocking, about eval of an arithmetic string the function builds itself', () => {
    const code = [
      'def do_algebra(operator, operand):',
      '    expression = str(operand[0])',
      '    for oper, oprn in zip(operator, operand[1:]):',
      '        expression += oper + str(oprn)',
      '    return eval(expression)',
    ].join('\n');
    const result = check(code);
    expect(result.findings.map((found) => found.ruleId)).toEqual([RuleId.PYTHON_EVAL_BUILT_STRING]);
    expect(result.verdict).toBe(Verdict.WARN);
  });

  it.each([
    ['a parameter', 'def calc(expression):\n    return eval(expression)'],
    ['a local copy of input()', 'def calc():\n    expression = input()\n    return eval(expression)'],
    ['a local built from input', "def calc():\n    expression = '1 + ' + input()\n    return eval(expression)"],
    ['a loop variable', 'def calc(lines):\n    for expression in lines:\n        print(eval(expression))'],
    ['a module-level name', 'expression = read()\nprint(eval(expression))'],
    ['a string read from a file', "def calc(path):\n    expression = open(path).read()\n    return eval(expression)"],
  ])('blocks eval of %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([RuleId.PYTHON_DYNAMIC_EVAL]);
  });
});

describe('py.subprocess-shell: a shell given -c', () => {
  it.each([
    ['subprocess.run(["bash", "-c", cmd])', 'import subprocess\nsubprocess.run(["bash", "-c", cmd])'],
    ['Popen with /bin/sh and an f-string', 'import subprocess\nsubprocess.Popen(["/bin/sh", "-c", f"tar czf {out} ."])'],
  ])('flags %s', (_name, code) => {
    expect(rulesOf(code)).toEqual([RuleId.PYTHON_SUBPROCESS_SHELL]);
  });

  it('allows a shell with a fixed script, and programs run from a list', () => {
    expect(rulesOf('import subprocess\nsubprocess.run(["sh", "-c", "echo hi"])\nsubprocess.run(["git", "log", "-1", ref], check=True)')).toEqual([]);
  });
});
