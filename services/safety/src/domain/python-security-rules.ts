import type { Node } from 'web-tree-sitter';
import { RuleId, type FileFindings } from './findings';
import { Arguments, maxDepth, stringLiteral, type Scope } from './python-scope';
import { securityWordIn } from './security-words';

/**
 * The Python rules for the weaknesses Bandit rates HIGH, and the ones next to
 * them: weak hashes, ciphers and keys, TLS without checks or on old
 * versions, XML entities, unsafe deserialization, jinja2 without
 * autoescape, Flask's debugger, SSH without host keys, mktemp, hard-coded
 * passwords, SQL built by formatting, binding every interface, telnet and
 * FTP, pyCrypto, world-writable files. Each looks at resolved names
 * (`from Crypto.Cipher import DES as D` is `Crypto.Cipher.DES`), so
 * aliases do not hide a call and unrelated names that look alike do not match.
 */

const weakHashes = new Set(['md5', 'sha1', 'md4', 'md2', 'sha', 'ripemd160']);
/** hashlib/Crypto/cryptography spellings of MD5 and SHA-1 constructors. */
const weakHashCall = /^(hashlib\.(md5|sha1)|(Crypto|Cryptodome)\.Hash\.(MD2|MD4|MD5|SHA|SHA1)\.new|cryptography\.hazmat\.primitives\.hashes\.(MD5|SHA1))$/;
const weakCipherCall = /^((Crypto|Cryptodome)\.Cipher\.(DES|DES3|ARC2|ARC4|Blowfish|CAST|XOR)\.new|cryptography\.hazmat\.primitives\.ciphers\.algorithms\.(ARC4|Blowfish|CAST5|IDEA|SEED|TripleDES)|pyDes\.(des|triple_des))$/;
const ecbMode = /^((Crypto|Cryptodome)\.Cipher\.\w+\.MODE_ECB|cryptography\.hazmat\.primitives\.ciphers\.modes\.ECB)$/;
const keyGenerators = /^(cryptography\.hazmat\.primitives\.asymmetric\.(rsa|dsa)\.generate_private_key|(Crypto|Cryptodome)\.PublicKey\.(RSA|DSA)\.generate)$/;
const weakCurves = /^cryptography\.hazmat\.primitives\.asymmetric\.ec\.(SECP192R1|SECT163K1|SECT163R2)$/;
const oldProtocols = /^(ssl\.(PROTOCOL_SSLv2|PROTOCOL_SSLv3|PROTOCOL_TLSv1|PROTOCOL_TLSv1_1|TLSVersion\.(SSLv3|TLSv1|TLSv1_1))|OpenSSL\.SSL\.(SSLv2_METHOD|SSLv3_METHOD|TLSv1_METHOD|TLSv1_1_METHOD))$/;
const unverifiedContexts = new Set(['ssl._create_unverified_context', 'ssl._create_stdlib_context']);
const xmlParsers =
  /^(xml\.etree\.(c?ElementTree)\.(parse|iterparse|fromstring|fromstringlist|XML|XMLParser|XMLPullParser)|xml\.dom\.(minidom|pulldom)\.(parse|parseString)|xml\.dom\.expatbuilder\.(parse|parseString)|xml\.sax\.(parse|parseString|make_parser)|xml\.parsers\.expat\.ParserCreate|lxml\.etree\.(parse|fromstring|XML|XMLParser|iterparse)|xmlrpc\.(client|server)\.\w+)$/;
const externalEntityFeatures = /^xml\.sax\.handler\.(feature_external_ges|feature_external_pes)$/;
const pickleModules = ['pickle', 'cPickle', '_pickle', 'dill', 'cloudpickle', 'marshal'];
const deserializers = new Set([
  ...pickleModules.flatMap((module) => ['load', 'loads', 'Unpickler'].map((name) => `${module}.${name}`)),
  'shelve.open',
  'shelve.DbfilenameShelf',
  'jsonpickle.decode',
  'jsonpickle.unpickler.decode',
  'pandas.read_pickle',
  'joblib.load',
  'yaml.unsafe_load',
  'yaml.unsafe_load_all',
]);
const yamlLoaders = new Set(['yaml.load', 'yaml.load_all']);
const safeYamlLoader = /(^|\.)(SafeLoader|CSafeLoader|BaseLoader|CBaseLoader)$/;
const insecureTempfiles = new Set(['tempfile.mktemp', 'os.tempnam', 'os.tmpnam']);
const sqlMethods = new Set(['execute', 'executemany', 'executescript', 'mogrify', 'raw', 'read_sql', 'read_sql_query']);
/** Text that reads as SQL: a statement keyword with its companion. */
const sqlText = /\b(select\b[\s\S]*\bfrom|insert\s+(or\s+\w+\s+)?into|update\b[\s\S]*\bset|delete\s+from|create\s+(table|index|view)|drop\s+(table|index|view)|alter\s+table|replace\s+into)\b|\bwhere\s+\w+\s*(=|<|>|like|in)/i;
/** Names that hold a secret. */
const secretNames = /^_*(\w+_)?(password|passwd|passphrase|pwd|secret|secret_key|api_key|apikey|auth_token|access_token|api_token|private_key|client_secret)$/i;
const chmods = new Set(['os.chmod', 'os.fchmod', 'os.lchmod']);
const worldWritableFlags = /\b(S_IWOTH|S_IRWXO)\b/;
const allInterfaces = new Set(['0.0.0.0', '::']);

/** Dotted names these rules know, so `from tempfile import *` binds the bare names. */
export const securityKnownNames: readonly string[] = [...deserializers, ...yamlLoaders, ...insecureTempfiles, 'hashlib.md5', 'hashlib.sha1', 'hashlib.new', 'ssl._create_unverified_context'];

/** Runs the security rules over one parsed file, with the names `scope` resolved. */
export function checkPythonSecurity(root: Node, scope: Scope, out: FileFindings): void {
  const flaskApp = scope.importsModule('flask');
  for (const node of root.descendantsOfType(['call', 'attribute', 'identifier', 'import_statement', 'import_from_statement', 'assignment', 'keyword_argument', 'comparison_operator', 'pair', 'default_parameter', 'typed_default_parameter', 'string'])) {
    switch (node.type) {
      case 'call':
        checkCall(node, scope, flaskApp, out);
        break;
      case 'attribute':
      case 'identifier':
        checkReference(node, scope, out);
        break;
      case 'import_statement':
      case 'import_from_statement':
        checkImport(node, out);
        break;
      case 'assignment':
        checkAssignment(node, flaskApp, out);
        break;
      case 'string':
        checkBindAddress(node, out);
        break;
      default:
        checkSecretLiteral(node, out);
    }
  }
}

function checkCall(call: Node, scope: Scope, flaskApp: boolean, out: FileFindings): void {
  const callee = call.childForFieldName('function');
  if (callee === null) return;
  const name = scope.resolve(callee);
  const args = new Arguments(call.childForFieldName('arguments'));
  const at = call.startPosition;
  const method = callee.type === 'attribute' ? callee.childForFieldName('attribute')?.text : undefined;

  const verify = args.keyword('verify');
  if (verify?.type === 'false') out.add(RuleId.PYTHON_TLS_NO_VERIFY, at, `${shortText(callee)}(verify=False) accepts any certificate, so anyone on the network path can read and change the traffic`);
  const certRequirements = args.keyword('cert_reqs');
  if (certRequirements !== undefined && stringLiteral(certRequirements) === 'CERT_NONE') out.add(RuleId.PYTHON_TLS_NO_VERIFY, at, `${shortText(callee)}(cert_reqs='CERT_NONE') turns certificate checks off`);
  if (method === 'set_missing_host_key_policy') {
    const policy = args.at(0) ?? args.keyword('policy');
    const policyName = policy === undefined ? undefined : scope.resolve(policy.type === 'call' ? (policy.childForFieldName('function') ?? policy) : policy);
    if (policyName !== undefined && /(^|\.)(AutoAddPolicy|WarningPolicy)$/.test(policyName)) {
      out.add(RuleId.PYTHON_SSH_NO_HOST_KEY_CHECK, at, `${policyName.split('.').pop() ?? policyName} accepts any host key, so the SSH connection can be intercepted`);
    }
  }
  if (method === 'setFeature') {
    const feature = args.at(0) === undefined ? undefined : scope.resolve(args.at(0) as Node);
    const value = args.at(1);
    if (feature !== undefined && externalEntityFeatures.test(feature) && value !== undefined && value.type === 'true') {
      out.add(RuleId.PYTHON_XML_ENTITIES, at, `${feature.split('.').pop() ?? feature} on makes the SAX parser fetch external entities (local files, URLs) named by the document`);
    }
  }
  if (method !== undefined && sqlMethods.has(method)) checkSql(call, args, scope, out);
  // The archive object is rarely named by its type (`with tarfile.open(p) as tar`): a file that imports tarfile and calls extractall is enough.
  if (method === 'extractall' && scope.importsModule('tarfile') && !args.hasSplat && args.keyword('filter') === undefined && args.keyword('members') === undefined) {
    out.add(RuleId.PYTHON_TAR_EXTRACT_ALL, at, 'extractall() of a tar archive writes wherever its member names point (../, absolute paths, links), so an archive from elsewhere can overwrite any file the code may write');
  }
  if (name !== undefined && chmods.has(name)) {
    checkMode(call, args.at(1) ?? args.keyword('mode'), out);
  } else if (method === 'chmod') {
    // Path('x').chmod(mode), p.chmod(mode): the mode comes first.
    checkMode(call, args.at(0) ?? args.keyword('mode'), out);
  }
  if (name === undefined) return;

  if (weakHashCall.test(name) || (name === 'hashlib.new' && weakHashes.has((stringLiteral(args.at(0) ?? args.keyword('name') ?? call) ?? '').toLowerCase()))) {
    checkHash(call, name, args, out);
  } else if (weakCipherCall.test(name)) {
    out.add(RuleId.PYTHON_WEAK_CIPHER, at, `${name.split('.').slice(-2).join('.')} is a broken or 64-bit-block cipher; data it protects can be recovered`);
  } else if (ecbMode.test(name)) {
    out.add(RuleId.PYTHON_WEAK_CIPHER_MODE, at, 'ECB mode encrypts equal blocks to equal ciphertext, so patterns of the data show through');
  } else if (keyGenerators.test(name)) {
    checkKeySize(call, name, args, out);
  } else if (name === 'cryptography.hazmat.primitives.asymmetric.ec.generate_private_key') {
    const curve = args.at(0) ?? args.keyword('curve');
    const curveName = curve === undefined ? undefined : scope.resolve(curve.type === 'call' ? (curve.childForFieldName('function') ?? curve) : curve);
    if (curveName !== undefined && weakCurves.test(curveName)) out.add(RuleId.PYTHON_WEAK_KEY, at, `the curve ${curveName.split('.').pop() ?? ''} is under 224 bits, too small to resist attack`);
  } else if (unverifiedContexts.has(name)) {
    out.add(RuleId.PYTHON_TLS_NO_VERIFY, at, `${name}() makes a TLS context that checks neither the certificate nor the host name`);
  } else if (xmlParsers.test(name)) {
    checkXml(call, name, args, out);
  } else if (deserializers.has(name) || ((name === 'numpy.load' || name === 'np.load') && args.keyword('allow_pickle')?.type === 'true')) {
    out.add(RuleId.PYTHON_UNSAFE_DESERIALIZATION, at, `${name}() rebuilds objects from bytes and runs code chosen by whoever wrote them`);
  } else if (yamlLoaders.has(name)) {
    const loader = args.at(1) ?? args.keyword('Loader');
    const loaderName = loader === undefined ? undefined : scope.resolve(loader);
    if (loaderName === undefined || !safeYamlLoader.test(loaderName)) out.add(RuleId.PYTHON_UNSAFE_DESERIALIZATION, at, `${name}() without a safe Loader can build any Python object the document names`);
  } else if (name === 'jinja2.Environment' || name === 'jinja2.environment.Environment') {
    const autoescape = args.keyword('autoescape');
    if (autoescape === undefined ? !args.hasSplat : autoescape.type === 'false') {
      out.add(RuleId.PYTHON_JINJA2_AUTOESCAPE_OFF, at, `jinja2.Environment with autoescape ${autoescape === undefined ? 'unset (off by default)' : 'off'} renders variables into HTML unescaped (cross-site scripting)`);
    }
  } else if (flaskApp && method === 'run' && args.keyword('debug')?.type === 'true') {
    out.add(RuleId.PYTHON_FLASK_DEBUG, at, "run(debug=True) serves Werkzeug's debugger, which runs Python code typed into the browser");
  } else if (insecureTempfiles.has(name)) {
    out.add(RuleId.PYTHON_INSECURE_TEMPFILE, at, `${name}() returns a name without creating the file; another process can create it first`);
  } else if (name === 'telnetlib.Telnet' || name === 'ftplib.FTP') {
    out.add(RuleId.PYTHON_CLEARTEXT_PROTOCOL, at, `${name}() sends credentials and data in clear text`);
  }
}

function checkHash(call: Node, name: string, args: Arguments, out: FileFindings): void {
  const notForSecurity = args.keyword('usedforsecurity');
  if (notForSecurity?.type === 'false') return;
  const algorithm = name === 'hashlib.new' ? (stringLiteral(args.at(0) ?? call) ?? 'md5').toUpperCase() : (name.split('.').filter((part) => part !== 'new').pop() ?? name).toUpperCase();
  const context = securityContext(call);
  if (context !== undefined) {
    out.add(RuleId.PYTHON_WEAK_HASH_SECURITY, call.startPosition, `${algorithm} protects ${context}; it is broken for security (collisions, fast brute force)`);
  } else {
    out.add(RuleId.PYTHON_WEAK_HASH, call.startPosition, `${algorithm} is broken for security; fine for a checksum only when marked usedforsecurity=False`);
  }
}

/**
 * What a hash call protects, when its arguments, the name it is assigned
 * to, or the enclosing function's name say (password, token, signature,
 * ...); undefined when nothing does.
 */
function securityContext(call: Node): string | undefined {
  const word = securityWordIn(call.childForFieldName('arguments')?.text ?? '');
  if (word !== undefined) return `"${word}"`;
  for (let node: Node | null = call.parent, depth = 0; node !== null && depth < maxDepth; node = node.parent, depth += 1) {
    if (node.type === 'assignment') {
      const target = node.childForFieldName('left')?.text ?? '';
      if (securityWordIn(target) !== undefined) return `"${target.slice(0, 40)}"`;
    }
    if (node.type === 'function_definition') {
      const functionName = node.childForFieldName('name')?.text ?? '';
      return securityWordIn(functionName) === undefined ? undefined : `what ${functionName}() computes`;
    }
  }
  return undefined;
}


function checkKeySize(call: Node, name: string, args: Arguments, out: FileFindings): void {
  // rsa.generate_private_key(public_exponent, key_size), dsa.generate_private_key(key_size), RSA.generate(bits)
  const isRsaCryptography = name.endsWith('rsa.generate_private_key');
  const size = args.keyword('key_size') ?? args.keyword('bits') ?? args.at(isRsaCryptography ? 1 : 0);
  const bits = size === undefined ? undefined : integerValue(size);
  if (bits !== undefined && bits < 2048) {
    const kind = /rsa|RSA/.test(name) ? 'RSA' : 'DSA';
    out.add(RuleId.PYTHON_WEAK_KEY, call.startPosition, `a ${bits}-bit ${kind} key can be factored or forged; 2048 bits is the minimum`);
  }
}

function checkXml(call: Node, name: string, args: Arguments, out: FileFindings): void {
  if (name === 'lxml.etree.XMLParser' && (args.keyword('resolve_entities')?.type === 'true' || args.keyword('no_network')?.type === 'false')) {
    out.add(RuleId.PYTHON_XML_ENTITIES, call.startPosition, 'this lxml parser resolves external entities, so a document can read local files or reach the network (XXE)');
    return;
  }
  out.add(RuleId.PYTHON_XML_UNSAFE_PARSER, call.startPosition, `${name}() expands entities; untrusted XML can exhaust memory ("billion laughs") or, with lxml, read local files`);
}

function checkMode(call: Node, mode: Node | undefined, out: FileFindings): void {
  if (mode === undefined) return;
  const value = integerValue(mode);
  const worldWritable = value !== undefined ? (value & 0o002) !== 0 : worldWritableFlags.test(mode.text);
  if (worldWritable) out.add(RuleId.PYTHON_PERMISSIVE_FILE_MODE, call.startPosition, `mode ${mode.text.slice(0, 40)} lets every user of the machine change the file`);
}

/** SQL built by formatting in the first argument of execute() and friends, directly or through a local variable. */
function checkSql(call: Node, args: Arguments, scope: Scope, out: FileFindings): void {
  const query = args.at(0) ?? args.keyword('sql') ?? args.keyword('query') ?? args.keyword('operation');
  if (query === undefined) return;
  // A query may be built over several statements (sql = '...'; sql += f'...'): the SQL text of all of them counts.
  const values = (query.type === 'identifier' ? assignedInScope(query, query.text) : [query]).map((value) => formatting(value, scope));
  const how = values.find((value) => value.how !== undefined)?.how;
  if (how === undefined || !sqlText.test(values.map((value) => value.text).join(' '))) return;
  out.add(RuleId.PYTHON_SQL_STRING_FORMAT, call.startPosition, `the SQL passed to ${shortText(call.childForFieldName('function') ?? call)}() is built with ${how}, so a value containing a quote changes the query (SQL injection)`);
}

/**
 * The literal text of a string expression, and how it formats values that
 * may carry a quote into it ("an f-string", "% formatting", ...; undefined
 * when it formats none).
 */
function formatting(node: Node, scope: Scope): { text: string; how: string | undefined } {
  const literalText: string[] = [];
  let dynamic = false;
  let how: string | undefined;
  const visit = (part: Node, depth: number): void => {
    if (depth > maxDepth) return;
    if (part.type === 'string') {
      for (const child of part.namedChildren) {
        if (child.type === 'string_content') literalText.push(child.text);
        if (child.type === 'interpolation') {
          how ??= 'an f-string';
          const expression = child.namedChildren.find((inner) => inner.type !== 'comment' && inner.type !== 'format_specifier' && inner.type !== 'type_conversion');
          if (expression !== undefined && !isSafeValue(expression, scope)) dynamic = true;
        }
      }
    } else if (part.type === 'concatenated_string' || part.type === 'parenthesized_expression') {
      for (const child of part.namedChildren) visit(child, depth + 1);
    } else if (part.type === 'binary_operator') {
      const operator = part.childForFieldName('operator')?.text;
      const left = part.childForFieldName('left');
      const right = part.childForFieldName('right');
      if (operator === '%' && left !== null && right !== null) {
        visit(left, depth + 1);
        how ??= '% formatting';
        if (!isSafeValue(right, scope)) dynamic = true;
      } else if (operator === '+' && left !== null && right !== null) {
        for (const side of [left, right]) {
          if (['string', 'concatenated_string', 'binary_operator', 'parenthesized_expression'].includes(side.type)) visit(side, depth + 1);
          else if (!isSafeValue(side, scope)) {
            how ??= 'concatenation';
            dynamic = true;
          }
        }
      }
    } else if (part.type === 'call') {
      const callee = part.childForFieldName('function');
      const receiver = callee?.type === 'attribute' ? callee.childForFieldName('object') : null;
      if (callee?.type === 'attribute' && callee.childForFieldName('attribute')?.text === 'format' && receiver !== null && receiver !== undefined) {
        visit(receiver, depth + 1);
        how ??= 'str.format()';
        const formatArgs = new Arguments(part.childForFieldName('arguments'));
        if ([...formatArgs.positional, ...formatArgs.keywordValues].some((value) => !isSafeValue(value, scope))) dynamic = true;
      }
    }
  };
  visit(node, 0);
  return { text: literalText.join(' '), how: dynamic ? how : undefined };
}

/**
 * Values that cannot carry a quote into SQL: literals, module-level string
 * constants, numbers made with int()/float()/len(), and placeholder lists
 * (`', '.join('?' * n)`, `','.join(['%s'] * len(ids))`).
 */
function isSafeValue(node: Node, scope: Scope): boolean {
  if (['integer', 'float', 'true', 'false', 'none'].includes(node.type)) return true;
  if (stringLiteral(node) !== undefined) return true;
  if (node.type === 'identifier') {
    const value = scope.assignedValue(node.text);
    if (value !== undefined && (stringLiteral(value) !== undefined || value.type === 'integer')) return true;
    const local = assignedInScope(node, node.text);
    return local.length > 0 && local.every((assigned) => isPlaceholderList(assigned));
  }
  if (node.type === 'call') {
    const callee = node.childForFieldName('function');
    if (callee?.type === 'identifier' && ['int', 'float', 'len', 'bool'].includes(callee.text)) return true;
    return isPlaceholderList(node);
  }
  return false;
}

function isPlaceholderList(node: Node): boolean {
  if (node.type !== 'call') return false;
  const callee = node.childForFieldName('function');
  const separator = callee?.type === 'attribute' ? callee.childForFieldName('object') : null;
  if (callee?.childForFieldName('attribute')?.text !== 'join' || separator === null || separator === undefined || stringLiteral(separator) === undefined) return false;
  const joined = node.childForFieldName('arguments')?.text ?? '';
  return /['"](\?|%s|:\w+|\$\d+)['"]/.test(joined) && !/\b(input|request|argv)\b/.test(joined);
}

/** The values assigned to `name` in the function (or module) around `node`. */
function assignedInScope(node: Node, name: string): Node[] {
  let container: Node | null = node.parent;
  while (container !== null && container.type !== 'function_definition' && container.type !== 'module') container = container.parent;
  if (container === null) return [];
  const values: Node[] = [];
  for (const assignment of container.descendantsOfType(['assignment', 'augmented_assignment'])) {
    const left = assignment.childForFieldName('left');
    const right = assignment.childForFieldName('right');
    if (left?.type === 'identifier' && left.text === name && right !== null) values.push(right);
  }
  return values;
}

function checkReference(node: Node, scope: Scope, out: FileFindings): void {
  const last = node.type === 'attribute' ? node.childForFieldName('attribute')?.text : node.text;
  if (last === undefined || !/^(CERT_NONE|MODE_ECB|PROTOCOL_\w+|SSLv\w+|TLSv\w+)$/.test(last)) return;
  // `ssl.CERT_NONE` is one attribute node; its `CERT_NONE` identifier child is not a reference of its own.
  if (node.type === 'identifier' && node.parent?.type === 'attribute') return;
  if (node.type === 'identifier' && ['import_from_statement', 'aliased_import', 'dotted_name'].includes(node.parent?.type ?? '')) return;
  if (node.parent?.type === 'keyword_argument' && node.parent.childForFieldName('name')?.equals(node)) return;
  const name = scope.resolve(node);
  if (name === undefined) return;
  if (name === 'ssl.CERT_NONE') out.add(RuleId.PYTHON_TLS_NO_VERIFY, node.startPosition, 'ssl.CERT_NONE turns certificate checks off, so anyone on the network path can read and change the traffic');
  else if (oldProtocols.test(name)) out.add(RuleId.PYTHON_TLS_OLD_PROTOCOL, node.startPosition, `${name.split('.').slice(-2).join('.')} is a broken SSL/TLS version`);
  else if (ecbMode.test(name)) out.add(RuleId.PYTHON_WEAK_CIPHER_MODE, node.startPosition, 'MODE_ECB encrypts equal blocks to equal ciphertext, so patterns of the data show through');
}

function checkImport(statement: Node, out: FileFindings): void {
  const modules =
    statement.type === 'import_from_statement'
      ? [statement.childForFieldName('module_name')?.text ?? '']
      : statement.namedChildren.map((child) => (child.type === 'aliased_import' ? (child.childForFieldName('name')?.text ?? '') : child.text));
  for (const module of modules) {
    if (module === 'Crypto' || module.startsWith('Crypto.')) {
      out.add(RuleId.PYTHON_DEPRECATED_CRYPTO, statement.startPosition, `${module} is pyCrypto's namespace; pyCrypto is unmaintained and has known vulnerabilities`);
    } else if (module === 'telnetlib') {
      out.add(RuleId.PYTHON_CLEARTEXT_PROTOCOL, statement.startPosition, 'telnetlib speaks telnet, which sends credentials and data in clear text');
    }
  }
}

function checkAssignment(assignment: Node, flaskApp: boolean, out: FileFindings): void {
  const left = assignment.childForFieldName('left');
  const right = assignment.childForFieldName('right');
  if (left === null || right === null) return;
  const attribute = left.type === 'attribute' ? left.childForFieldName('attribute')?.text : undefined;
  if ((attribute === 'check_hostname' || attribute === 'verify') && right.type === 'false') {
    out.add(RuleId.PYTHON_TLS_NO_VERIFY, assignment.startPosition, `${shortText(left)} = False turns TLS ${attribute === 'verify' ? 'certificate' : 'host name'} checks off`);
  } else if (flaskApp && attribute === 'debug' && right.type === 'true') {
    out.add(RuleId.PYTHON_FLASK_DEBUG, assignment.startPosition, "debug = True serves Werkzeug's debugger, which runs Python code typed into the browser");
  }
  const target = left.type === 'identifier' ? left.text : attribute;
  if (target !== undefined && secretNames.test(target)) checkSecret(assignment, target, right, out);
  if (target !== undefined && /host|bind|addr|interface|listen/i.test(target)) {
    const value = stringLiteral(right);
    if (value !== undefined && allInterfaces.has(value)) out.add(RuleId.PYTHON_BIND_ALL_INTERFACES, assignment.startPosition, `${target} = ${JSON.stringify(value)} listens on every network interface`);
  }
}

/** `password="..."` as a keyword argument, a dict entry, a default, or in a comparison. */
function checkSecretLiteral(node: Node, out: FileFindings): void {
  if (node.type === 'keyword_argument' || node.type === 'default_parameter' || node.type === 'typed_default_parameter') {
    const name = node.childForFieldName('name')?.text;
    const value = node.childForFieldName('value');
    if (name !== undefined && value !== null && secretNames.test(name)) checkSecret(node, name, value, out);
  } else if (node.type === 'pair') {
    const key = node.childForFieldName('key');
    const value = node.childForFieldName('value');
    const keyText = key === null ? undefined : stringLiteral(key);
    if (keyText !== undefined && value !== null && secretNames.test(keyText)) checkSecret(node, keyText, value, out);
  } else if (node.type === 'comparison_operator') {
    const operands = node.namedChildren.filter((child) => child.type !== 'comment');
    if (operands.length !== 2 || !/==|!=/.test(node.text)) return;
    const [left, right] = operands as [Node, Node];
    const named = [left, right].find((operand) => secretNames.test(operand.type === 'attribute' ? (operand.childForFieldName('attribute')?.text ?? '') : operand.type === 'identifier' ? operand.text : ''));
    const literal = [left, right].find((operand) => operand !== named);
    if (named !== undefined && literal !== undefined) checkSecret(node, named.text, literal, out);
  }
}

function checkSecret(node: Node, name: string, value: Node, out: FileFindings): void {
  const secret = stringLiteral(value);
  if (secret === undefined || !looksLikeSecret(name, secret)) return;
  out.add(RuleId.PYTHON_HARDCODED_PASSWORD, node.startPosition, `${name} is set to a literal; a secret in the code ends up in every copy and every log of it`);
}

/** Skips empty values, placeholders and values that name a setting rather than hold one ("APP_PASSWORD", "password"). */
function looksLikeSecret(name: string, value: string): boolean {
  if (value.trim().length < 3) return false;
  if (/^[A-Z][A-Z0-9_]*$/.test(value)) return false;
  if (value.toLowerCase() === name.toLowerCase() || /^(password|passwd|secret|token|none|null|changeit|\*+|x+|<.*>|\$\{.*\}|%\(.*\)s|\{.*\})$/i.test(value)) return false;
  return !/^(https?|file):\/\//.test(value);
}

/**
 * "0.0.0.0" or "::" where an address is bound: an (address, port) tuple, a
 * keyword such as host= or bind=, or an argument of a call that binds,
 * listens or serves. The same text elsewhere (sqlparse's "::" typecast
 * token, a format string) is not an address.
 */
function checkBindAddress(node: Node, out: FileFindings): void {
  if (!node.text.includes('0.0.0.0') && !node.text.includes('::')) return;
  const value = stringLiteral(node);
  if (value === undefined || !allInterfaces.has(value)) return;
  let parent = node.parent;
  const inTuple = parent?.type === 'tuple';
  if (inTuple) parent = parent?.parent ?? null;
  const keyword = parent?.type === 'keyword_argument' ? (parent.childForFieldName('name')?.text ?? '') : undefined;
  const callee = parent?.type === 'argument_list' ? (parent.parent?.childForFieldName('function')?.text ?? '') : undefined;
  const address = keyword !== undefined ? /host|bind|addr|interface|listen/i.test(keyword) : callee !== undefined && (inTuple || /bind|listen|serve|server|run|socket|start/i.test(callee));
  if (address) out.add(RuleId.PYTHON_BIND_ALL_INTERFACES, node.startPosition, `${JSON.stringify(value)} listens on every network interface`);
}

/** The value of an integer literal (0o777, 0x1ff, 1_024, 511). */
function integerValue(node: Node): number | undefined {
  if (node.type !== 'integer') return undefined;
  const text = node.text.replace(/_/g, '').toLowerCase();
  const value = text.startsWith('0o') ? Number.parseInt(text.slice(2), 8) : text.startsWith('0x') ? Number.parseInt(text.slice(2), 16) : text.startsWith('0b') ? Number.parseInt(text.slice(2), 2) : Number(text);
  return Number.isFinite(value) ? value : undefined;
}

function shortText(node: Node): string {
  const text = node.text.replace(/\s+/g, ' ');
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
