import type { Node } from 'web-tree-sitter';
import { RuleId, type FileFindings } from './findings';
import { securityWordIn } from './security-words';
import { decodeEscapes } from './syntax';
import { escapesWorkspace, joinPaths } from './workspace-paths';

/** Module names without their `node:` prefix. */
const childProcessModule = 'child_process';
const fsModules = new Set(['fs', 'fs/promises', 'fs-extra', 'graceful-fs']);
const withSync = (names: readonly string[]) => names.flatMap((name) => [name, `${name}Sync`]);
/** fs (and fs-extra) functions whose first argument is a path they create, change or delete. */
const fsPathWriters = new Set(
  withSync([
    'writeFile',
    'appendFile',
    'mkdir',
    'mkdtemp',
    'rm',
    'rmdir',
    'unlink',
    'truncate',
    'chmod',
    'lchmod',
    'chown',
    'lchown',
    'utimes',
    'lutimes',
    'outputFile',
    'outputJson',
    'outputJSON',
    'writeJson',
    'writeJSON',
    'remove',
    'emptyDir',
    'emptydir',
    'ensureDir',
    'ensureFile',
    'mkdirp',
    'mkdirs',
  ]).concat(['createWriteStream']),
);
/** fs functions that remove their source and write their destination: both paths count. */
const fsMovers = new Set(withSync(['rename', 'move']));
/** fs functions whose second argument is the path they write. */
const fsCopiers = new Set(withSync(['copyFile', 'cp', 'copy', 'symlink', 'link', 'ensureSymlink', 'ensureLink']));
/** fs functions that write only when their flags say so. */
const fsOpeners = new Set(withSync(['open']));
const vmRunners = new Set(['runInNewContext', 'runInThisContext', 'runInContext', 'compileFunction']);
const vmConstructors = new Set(['Script', 'SourceTextModule', 'SyntheticModule']);
/** Names of the global object, through which `eval` and `Function` are also reachable. */
const globalObjects = new Set(['globalThis', 'window', 'global', 'self']);
/** Internal bindings that spawn processes without child_process. */
const spawnBindings = new Set(['spawn_sync', 'process_wrap']);
/** child_process functions that always run their command through a shell. */
const shellRunners = new Set(['exec', 'execSync']);
/** child_process functions that run a program directly, unless `shell` is set. */
const programRunners = new Set(['execFile', 'execFileSync', 'spawn', 'spawnSync', 'fork']);
/** Programs that run their `-c` argument as a shell script. */
const shells = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'fish', 'csh', 'tcsh', 'cmd', 'cmd.exe', 'powershell', 'pwsh']);
const cipherFunctions = new Set(['createCipheriv', 'createDecipheriv']);
/** Cipher names (as OpenSSL spells them) of broken or 64-bit-block ciphers, and ECB mode. */
const weakCiphers = /^(des|des3|des-|des_|desx|rc2|rc4|rc5|bf|blowfish|cast|idea|seed)|-ecb$/i;
const weakHashes = new Set(['md5', 'md4', 'sha1', 'sha-1', 'ripemd160', 'rmd160']);
const sqlMethods = new Set(['query', 'execute', 'exec', 'run', 'all', 'get', 'each', 'prepare', 'raw', 'unsafe', '$queryRawUnsafe', '$executeRawUnsafe', 'queryRaw']);
/** Text that reads as SQL: a statement keyword with its companion. */
const sqlText = /\b(select\b[\s\S]*\bfrom|insert\s+(or\s+\w+\s+)?into|update\b[\s\S]*\bset|delete\s+from|create\s+(table|index|view)|drop\s+(table|index|view)|alter\s+table|replace\s+into)\b|\bwhere\s+\w+\s*(=|<|>|like|in)/i;

const maxDepth = 24;
/** Longest path worth computing; longer values are treated as unknown (real paths are far shorter). */
const maxPathLength = 4_096;

/** Where a rule reports: a FileFindings, or a wrapper that skips matches in type positions. */
type Findings = Pick<FileFindings, 'add'>;

/** What a local name or expression refers to: a module (`fs`), or one of its exports (`fs` + `writeFileSync`). */
interface ModuleRef {
  readonly module: string;
  readonly member?: string;
}

/**
 * Runs the JavaScript/TypeScript rules over one parsed file: shells and
 * programs run through child_process, eval of non-literal strings, the
 * Function constructor, the vm module, literal fs writes outside the
 * workspace, TLS without certificate checks, weak ciphers, hashes and keys
 * (node:crypto), and SQL built by templates or concatenation. Names are
 * resolved through imports, `require`, dynamic `import()`, destructuring,
 * `util.promisify` and simple re-bindings (`const { promises: fsp } =
 * require('fs')`). Type-only imports are ignored: they vanish at compile
 * time. Only syntax nodes are inspected, so the same words in comments and
 * strings never match.
 */
export function checkJavaScript(root: Node, out: FileFindings): void {
  const scope = new Scope();
  // Bindings first, so a function that uses `fs` above its `require('fs')` still resolves.
  for (const node of root.descendantsOfType(['import_statement', 'variable_declarator', 'assignment_expression'])) {
    if (node.type === 'import_statement') scope.bindImport(node);
    else if (node.type === 'variable_declarator') scope.bindDeclaration(node.childForFieldName('name'), node.childForFieldName('value'));
    else scope.bindDeclaration(node.childForFieldName('left'), node.childForFieldName('right'));
  }
  for (const node of root.descendantsOfType(['call_expression', 'new_expression', 'pair', 'assignment_expression'])) {
    if (node.type === 'pair') checkOption(node, out);
    else if (node.type === 'assignment_expression') checkTlsAssignment(node, out);
    else checkCall(node, scope, out);
  }
}

function checkCall(call: Node, scope: Scope, findings: FileFindings): void {
  const isNew = call.type === 'new_expression';
  const callee = call.childForFieldName(isNew ? 'constructor' : 'function');
  if (callee === null) return;
  const args = argumentsOf(call);
  // Checked only when something matched: walking up for every call would cost depth x calls.
  const out: Findings = { add: (...finding) => (inTypePosition(call) ? undefined : findings.add(...finding)) };

  const bindingName = stringValue(args[0]);
  if (!isNew && bindingName !== undefined && spawnBindings.has(bindingName) && isMember(callee, ['process'], 'binding')) {
    out.add(RuleId.JS_PROCESS_INTERNALS, call.startPosition, `process.binding(${JSON.stringify(bindingName)}) reaches the internals that spawn processes`);
    return;
  }
  if (!isNew) checkSql(call, callee, args, scope, out);
  if (!isNew && isGlobal(callee, 'eval')) {
    const code = args[0];
    if (code !== undefined && stringValue(code) === undefined) {
      out.add(RuleId.JS_DYNAMIC_EVAL, call.startPosition, `eval() runs code built at run time (${describeArgument(code)}), which lets data become code`);
    }
    return;
  }
  if (isGlobal(callee, 'Function')) {
    out.add(RuleId.JS_FUNCTION_CONSTRUCTOR, call.startPosition, `${isNew ? 'new ' : ''}Function(...) compiles a function from strings at run time, which lets data become code`);
    return;
  }

  const target = scope.refOf(callee);
  if (target?.member === undefined) return;
  // `fs.writeFileSync()`, plus how the code spelled it when an alias was resolved.
  const qualified = `${target.module}.${target.member}`;
  const shown = () => `${qualified}()${callee.text === qualified ? '' : ` (called as ${abbreviate(callee.text)})`}`;
  if (target.module === 'vm' && (isNew ? vmConstructors : vmRunners).has(target.member)) {
    out.add(RuleId.JS_VM, call.startPosition, `${isNew ? 'new ' : ''}${shown()} compiles and runs code from strings`);
    return;
  }
  if (target.module === childProcessModule && !isNew) {
    checkProcessCall(call, target.member, shown, args, scope, out);
    return;
  }
  if (target.module === 'crypto' && !isNew) {
    checkCrypto(call, target.member, shown, args, scope, out);
    return;
  }
  if (!fsModules.has(target.module) || isNew) return;
  for (const path of writtenPaths(target.member, args, scope)) {
    if (escapesWorkspace(path)) out.add(RuleId.WRITE_OUTSIDE_WORKSPACE, call.startPosition, `${shown()} writes to ${JSON.stringify(path)}, outside the workspace`);
  }
}

/**
 * exec/execSync always use a shell; execFile/spawn/fork only with `shell`
 * set, or when the program is a shell given `-c`. A shell on a command built
 * at run time is command injection waiting to happen; a program chosen at
 * run time is worth a look; a literal program with argument arrays is the
 * safe way and passes.
 */
function checkProcessCall(call: Node, member: string, shown: () => string, args: readonly Node[], scope: Scope, out: Findings): void {
  const command = args[0];
  if (command === undefined) return;
  const literalCommand = scope.literalPath(command) !== undefined;
  if (shellRunners.has(member)) {
    if (literalCommand) out.add(RuleId.JS_SHELL_LITERAL, call.startPosition, `${shown()} runs a fixed command through a shell`);
    else out.add(RuleId.JS_SHELL_COMMAND, call.startPosition, `${shown()} runs ${describeArgument(command)} through a shell, where a quote or ; in a value becomes command injection`);
    return;
  }
  if (!programRunners.has(member)) return;
  const list = args[1]?.type === 'array' ? args[1] : undefined;
  const items = list?.namedChildren.filter((child) => child.type !== 'comment') ?? [];
  const options = args.slice(1).map((arg) => (arg.type === 'identifier' ? scope.constantValue(arg.text) : arg)).find((arg) => arg?.type === 'object');
  const shell = options === undefined ? undefined : propertyValue(options, 'shell');
  const literalArguments = list !== undefined && items.every((item) => scope.literalPath(item) !== undefined);
  if (shell !== undefined && !['false', 'undefined', 'null'].includes(shell.type) && stringValue(shell) !== '') {
    if (literalCommand && (args[1] === undefined || args[1].type === 'object' || literalArguments)) out.add(RuleId.JS_SHELL_LITERAL, call.startPosition, `${shown()} with shell: true runs a fixed command through a shell`);
    else out.add(RuleId.JS_SHELL_COMMAND, call.startPosition, `${shown()} with shell: true runs a command built at run time through a shell, where a quote or ; in a value becomes command injection`);
    return;
  }
  const program = scope.literalPath(command);
  if (program === undefined) {
    out.add(RuleId.JS_PROCESS_SPAWN, call.startPosition, `${shown()} runs a program chosen at run time (${describeArgument(command)})`);
    return;
  }
  const flag = items.findIndex((item) => ['-c', '/c', '-Command'].includes(stringValue(item) ?? ''));
  const script = flag < 0 ? undefined : items[flag + 1];
  if (shells.has(program.slice(program.lastIndexOf('/') + 1)) && script !== undefined && scope.literalPath(script) === undefined) {
    out.add(RuleId.JS_SHELL_COMMAND, call.startPosition, `${shown()} runs ${program} -c on ${describeArgument(script)}, a shell script built at run time`);
  }
}

/** node:crypto: broken ciphers and ECB, MD5/SHA-1, short RSA/DSA keys. */
function checkCrypto(call: Node, member: string, shown: () => string, args: readonly Node[], scope: Scope, out: Findings): void {
  const first = args[0] === undefined ? undefined : scope.literalPath(args[0]);
  if (member === 'createCipher' || member === 'createDecipher') {
    out.add(RuleId.JS_WEAK_CIPHER, call.startPosition, `${shown()} derives its key with MD5 and uses no IV (deprecated, removed in Node 22)`);
  } else if (cipherFunctions.has(member) && first !== undefined && weakCiphers.test(first)) {
    out.add(RuleId.JS_WEAK_CIPHER, call.startPosition, `${shown()} with ${JSON.stringify(first)}: ${/-ecb$/i.test(first) ? 'ECB mode shows patterns of the data' : 'a broken or 64-bit-block cipher'}`);
  } else if (member === 'createHash' && first !== undefined && weakHashes.has(first.toLowerCase())) {
    const context = hashContext(call);
    if (context !== undefined) out.add(RuleId.JS_WEAK_HASH_SECURITY, call.startPosition, `${first.toUpperCase()} protects ${context}; it is broken for security (collisions, fast brute force)`);
    else out.add(RuleId.JS_WEAK_HASH, call.startPosition, `${first.toUpperCase()} is broken for security; use it only for checksums`);
  } else if ((member === 'generateKeyPair' || member === 'generateKeyPairSync') && (first === 'rsa' || first === 'dsa' || first === 'rsa-pss')) {
    const options = args[1]?.type === 'identifier' ? scope.constantValue(args[1].text) : args[1];
    const length = options?.type === 'object' ? propertyValue(options, 'modulusLength') : undefined;
    const bits = length?.type === 'number' ? Number(length.text.replace(/_/g, '')) : undefined;
    if (bits !== undefined && bits < 2048) out.add(RuleId.JS_WEAK_KEY, call.startPosition, `a ${bits}-bit ${first.toUpperCase()} key can be factored or forged; 2048 bits is the minimum`);
  }
}

/** What a hash protects, from the chain it is part of, the name it is stored in or the function around it. */
function hashContext(call: Node): string | undefined {
  let top = call;
  while (top.parent !== null && ['member_expression', 'call_expression', 'await_expression'].includes(top.parent.type)) top = top.parent;
  const word = securityWordIn(top.text.replace(/createHash\([^)]*\)/, ''));
  if (word !== undefined) return `"${word}"`;
  for (let node: Node | null = top.parent, depth = 0; node !== null && depth < maxDepth; node = node.parent, depth += 1) {
    if (node.type === 'variable_declarator' || node.type === 'assignment_expression') {
      const name = (node.childForFieldName('name') ?? node.childForFieldName('left'))?.text ?? '';
      if (securityWordIn(name) !== undefined) return `"${abbreviate(name)}"`;
    }
    if (['function_declaration', 'method_definition', 'function_expression', 'arrow_function'].includes(node.type)) {
      const named = node.childForFieldName('name') ?? (node.parent?.type === 'variable_declarator' ? node.parent.childForFieldName('name') : null);
      const name = named?.text ?? '';
      return securityWordIn(name) === undefined ? undefined : `what ${name}() computes`;
    }
  }
  return undefined;
}

/** SQL built with a template or + and passed to query()/execute()/run() and friends. */
function checkSql(call: Node, callee: Node, args: readonly Node[], scope: Scope, out: Findings): void {
  if (callee.type !== 'member_expression' || !sqlMethods.has(callee.childForFieldName('property')?.text ?? '')) return;
  const first = args[0];
  if (first === undefined) return;
  const query = first.type === 'identifier' ? scope.constantValue(first.text) : first;
  const how = query === undefined ? undefined : formattedSql(query, scope);
  if (how !== undefined) {
    out.add(RuleId.JS_SQL_STRING_FORMAT, call.startPosition, `the SQL passed to ${abbreviate(callee.text)}() is built with ${how}, so a value containing a quote changes the query (SQL injection)`);
  }
}

function formattedSql(node: Node, scope: Scope): string | undefined {
  const literalText: string[] = [];
  let dynamic = false;
  let how: string | undefined;
  const visit = (part: Node, depth: number): void => {
    if (depth > maxDepth) return;
    if (part.type === 'template_string') {
      for (const child of part.namedChildren) {
        if (child.type === 'string_fragment') literalText.push(child.text);
        if (child.type === 'template_substitution') {
          how ??= 'a template string';
          const value = child.namedChildren.find((inner) => inner.type !== 'comment');
          if (value !== undefined && !isSafeValue(value, scope)) dynamic = true;
        }
      }
    } else if (part.type === 'string') {
      literalText.push(stringValue(part) ?? '');
    } else if (part.type === 'parenthesized_expression') {
      for (const child of part.namedChildren) visit(child, depth + 1);
    } else if (part.type === 'binary_expression' && part.childForFieldName('operator')?.text === '+') {
      for (const side of [part.childForFieldName('left'), part.childForFieldName('right')]) {
        if (side === null) continue;
        if (['string', 'template_string', 'binary_expression', 'parenthesized_expression'].includes(side.type)) visit(side, depth + 1);
        else if (!isSafeValue(side, scope)) {
          how ??= 'concatenation';
          dynamic = true;
        }
      }
    }
  };
  visit(node, 0);
  return dynamic && sqlText.test(literalText.join(' ')) ? how : undefined;
}

/** Values that cannot carry a quote into SQL: literals, constants, numbers, placeholder lists (`ids.map(() => '?').join(',')`). */
function isSafeValue(node: Node, scope: Scope): boolean {
  if (['number', 'true', 'false', 'null', 'undefined'].includes(node.type)) return true;
  if (scope.literalPath(node) !== undefined) return true;
  if (node.type === 'call_expression') {
    const callee = node.childForFieldName('function');
    if (callee?.type === 'identifier' && ['Number', 'parseInt', 'parseFloat'].includes(callee.text)) return true;
    return callee?.type === 'member_expression' && callee.childForFieldName('property')?.text === 'join' && /['"`](\?|\$\d+)['"`]/.test(node.text);
  }
  if (node.type === 'identifier') {
    const value = scope.constantValue(node.text);
    return value !== undefined && value.type !== 'identifier' && isSafeValue(value, scope);
  }
  return false;
}

/** `rejectUnauthorized: false` in any options object. */
function checkOption(pair: Node, out: Findings): void {
  const key = pair.childForFieldName('key');
  const name = key === null ? undefined : (stringValue(key) ?? key.text);
  if (name === 'rejectUnauthorized' && pair.childForFieldName('value')?.type === 'false') {
    out.add(RuleId.JS_TLS_NO_VERIFY, pair.startPosition, 'rejectUnauthorized: false accepts any certificate, so anyone on the network path can read and change the traffic');
  }
}

/** `process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'` and `x.rejectUnauthorized = false`. */
function checkTlsAssignment(assignment: Node, out: Findings): void {
  const left = assignment.childForFieldName('left');
  const right = assignment.childForFieldName('right');
  if (left === null || right === null) return;
  const property = left.type === 'member_expression' ? left.childForFieldName('property')?.text : left.type === 'subscript_expression' ? stringValue(left.childForFieldName('index')) : undefined;
  if (property === 'NODE_TLS_REJECT_UNAUTHORIZED' && (stringValue(right) === '0' || right.text === '0')) {
    out.add(RuleId.JS_TLS_NO_VERIFY, assignment.startPosition, 'NODE_TLS_REJECT_UNAUTHORIZED=0 turns certificate checks off for every TLS connection of the process');
  } else if (property === 'rejectUnauthorized' && right.type === 'false') {
    out.add(RuleId.JS_TLS_NO_VERIFY, assignment.startPosition, 'rejectUnauthorized = false accepts any certificate, so anyone on the network path can read and change the traffic');
  }
}

/** The value of `key` in an object literal (`{ shell: true }`, `{ 'shell': true }`). */
function propertyValue(object: Node, key: string): Node | undefined {
  for (const pair of object.namedChildren) {
    if (pair.type === 'shorthand_property_identifier' && pair.text === key) return pair;
    if (pair.type !== 'pair') continue;
    const name = pair.childForFieldName('key');
    if (name !== null && (stringValue(name) ?? name.text) === key) return pair.childForFieldName('value') ?? undefined;
  }
  return undefined;
}

function writtenPaths(member: string, args: readonly Node[], scope: Scope): string[] {
  const paths = (...nodes: (Node | undefined)[]) => nodes.flatMap((node) => (node === undefined ? [] : [scope.literalPath(node)].filter((path) => path !== undefined)));
  if (fsPathWriters.has(member)) return paths(args[0]);
  if (fsMovers.has(member)) return paths(args[0], args[1]);
  if (fsCopiers.has(member)) return paths(args[1]);
  if (fsOpeners.has(member)) {
    const flags = args[1];
    const flagText = stringValue(flags);
    const writes = flagText !== undefined ? /[wa+]/.test(flagText) : flags !== undefined && /\bO_(WRONLY|RDWR|CREAT|APPEND|TRUNC)\b/.test(flags.text);
    return writes ? paths(args[0]) : [];
  }
  return [];
}

/** The names a file binds to modules and their exports. */
class Scope {
  private readonly bindings = new Map<string, ModuleRef>();
  /** Names bound exactly once, to that value; null when bound more than once. */
  private readonly constants = new Map<string, Node | null>();
  /** literalPath of names already worked out; undefined while in progress, so cycles end. */
  private readonly pathsOfNames = new Map<string, string | undefined>();

  bindImport(statement: Node): void {
    // `import type ... from 'child_process'` vanishes at compile time.
    if (hasKeyword(statement, 'type')) return;
    const requireClause = statement.namedChildren.find((child) => child.type === 'import_require_clause');
    const source = statement.childForFieldName('source') ?? requireClause?.childForFieldName('source') ?? null;
    const spelled = stringValue(source);
    if (spelled === undefined) return;
    const module = normalize(spelled);
    const specifiers = statement.descendantsOfType('import_specifier');
    // import cp = require('child_process')
    const requireName = requireClause?.namedChildren.find((child) => child.type === 'identifier');
    if (requireName !== undefined) this.bind(requireName.text, { module });
    const clause = statement.namedChildren.find((child) => child.type === 'import_clause');
    for (const child of clause?.namedChildren ?? []) {
      // import fs from 'fs'
      if (child.type === 'identifier') this.bind(child.text, { module });
      // import * as fs from 'fs'
      if (child.type === 'namespace_import') {
        const name = child.namedChildren.find((part) => part.type === 'identifier');
        if (name !== undefined) this.bind(name.text, { module });
      }
    }
    // import { writeFileSync as write, promises } from 'fs'
    for (const specifier of specifiers) {
      if (hasKeyword(specifier, 'type')) continue;
      const name = specifier.childForFieldName('name');
      const alias = specifier.childForFieldName('alias') ?? name;
      if (name !== null && alias !== null) this.bind(alias.text, memberOf({ module }, stringValue(name) ?? name.text));
    }
  }

  /** `const x = require('fs')`, `const { writeFileSync: w } = require('fs')`, `const p = '/etc/x'`, `x = fs.promises`. */
  bindDeclaration(target: Node | null, value: Node | null): void {
    if (target === null) return;
    if (target.type === 'identifier') {
      this.constants.set(target.text, this.constants.has(target.text) || value === null ? null : value);
    }
    const ref = value === null ? undefined : this.refOf(value);
    if (ref === undefined) return;
    if (target.type === 'identifier') {
      this.bind(target.text, ref);
      return;
    }
    if (target.type !== 'object_pattern' || ref.member !== undefined) return;
    for (const property of target.namedChildren) {
      if (property.type === 'shorthand_property_identifier_pattern') this.bind(property.text, memberOf(ref, property.text));
      if (property.type === 'pair_pattern') {
        const key = property.childForFieldName('key');
        const local = property.childForFieldName('value');
        const keyName = key === null ? undefined : (stringValue(key) ?? (key.type === 'property_identifier' ? key.text : undefined));
        if (keyName !== undefined && local?.type === 'identifier') this.bind(local.text, memberOf(ref, keyName));
      }
    }
  }

  private bind(name: string, ref: ModuleRef): void {
    this.bindings.set(name, ref);
  }

  /** The value a name was bound to, when it was bound exactly once. */
  constantValue(name: string): Node | undefined {
    return this.constants.get(name) ?? undefined;
  }

  /** The module or export an expression refers to: `fs`, `fs.promises.writeFile`, `require('fs').rmSync`, a bound name. */
  refOf(node: Node, depth = 0): ModuleRef | undefined {
    if (depth > maxDepth) return undefined;
    switch (node.type) {
      case 'identifier':
        return this.bindings.get(node.text);
      case 'call_expression': {
        const loaded = loadedModule(node);
        if (loaded !== undefined) return { module: normalize(loaded) };
        // promisify(exec) runs what exec runs.
        const callee = node.childForFieldName('function');
        const wrapper = callee === null ? undefined : this.refOf(callee, depth + 1);
        const wrapped = argumentsOf(node)[0];
        return wrapper?.module === 'util' && wrapper.member === 'promisify' && wrapped !== undefined ? this.refOf(wrapped, depth + 1) : undefined;
      }
      case 'member_expression':
      case 'subscript_expression': {
        const object = node.childForFieldName('object');
        const key = node.type === 'member_expression' ? node.childForFieldName('property')?.text : stringValue(node.childForFieldName('index'));
        const base = object === null ? undefined : this.refOf(object, depth + 1);
        return base === undefined || key === undefined || base.member !== undefined ? undefined : memberOf(base, key);
      }
      case 'await_expression':
      case 'parenthesized_expression':
      case 'as_expression':
      case 'satisfies_expression':
      case 'non_null_expression': {
        const inner = node.namedChildren.find((child) => child.type !== 'comment');
        return inner === undefined ? undefined : this.refOf(inner, depth + 1);
      }
      default:
        return undefined;
    }
  }

  /**
   * The path an expression evaluates to when it is built from literals only:
   * `'/etc/x'`, `` `../x` ``, `'/etc/' + 'x'`, `path.join('..', 'x')`,
   * `path.join(os.homedir(), '.ssh')`, a name bound once to one of those.
   */
  literalPath(node: Node, depth = 0): string | undefined {
    if (depth > maxDepth) return undefined;
    const literal = stringValue(node);
    if (literal !== undefined) return literal;
    switch (node.type) {
      case 'identifier': {
        // Each name is worked out once: `const b = a + a, c = b + b, ...` would otherwise double the work per name.
        if (this.pathsOfNames.has(node.text)) return this.pathsOfNames.get(node.text);
        this.pathsOfNames.set(node.text, undefined);
        const value = this.constants.get(node.text);
        const path = value === null || value === undefined ? undefined : this.literalPath(value, depth + 1);
        this.pathsOfNames.set(node.text, path);
        return path;
      }
      case 'binary_expression': {
        const left = node.childForFieldName('left');
        const right = node.childForFieldName('right');
        if (node.childForFieldName('operator')?.text !== '+' || left === null || right === null) return undefined;
        const head = this.literalPath(left, depth + 1);
        const tail = head === undefined ? undefined : this.literalPath(right, depth + 1);
        return head === undefined || tail === undefined || head.length + tail.length > maxPathLength ? undefined : head + tail;
      }
      case 'parenthesized_expression':
      case 'as_expression':
      case 'satisfies_expression':
      case 'non_null_expression': {
        const inner = node.namedChildren.find((child) => child.type !== 'comment');
        return inner === undefined ? undefined : this.literalPath(inner, depth + 1);
      }
      case 'call_expression': {
        const callee = node.childForFieldName('function');
        const ref = callee === null ? undefined : this.refOf(callee);
        if (ref?.module === 'os' && ref.member === 'homedir') return '~';
        if ((ref?.module === 'path' || ref?.module === 'path/posix') && (ref.member === 'join' || ref.member === 'resolve')) {
          const parts = argumentsOf(node).map((arg) => (arg.type === 'spread_element' ? undefined : this.literalPath(arg, depth + 1)));
          if (parts.length === 0 || parts.some((part) => part === undefined)) return undefined;
          const joined = joinPaths(parts as string[], ref.member === 'resolve');
          return joined.length > maxPathLength ? undefined : joined;
        }
        return undefined;
      }
      default:
        return undefined;
    }
  }
}

/** TypeScript type positions, where `typeof import('child_process')` describes a type and runs nothing. */
const typeContexts = new Set(['type_query', 'type_annotation', 'type_alias_declaration', 'type_arguments', 'type_parameters', 'interface_declaration', 'ambient_declaration', 'lookup_type', 'index_type_query']);

function inTypePosition(node: Node): boolean {
  for (let parent = node.parent; parent !== null; parent = parent.parent) if (typeContexts.has(parent.type)) return true;
  return false;
}

/** `fs` + `promises` is the `fs/promises` module; anything else is an export of the module. */
function memberOf(ref: ModuleRef, member: string): ModuleRef {
  if (member === 'default') return ref;
  if (member === 'promises' && (ref.module === 'fs' || ref.module === 'graceful-fs')) return { module: 'fs/promises' };
  if (member === 'posix' && ref.module === 'path') return { module: 'path/posix' };
  return { module: ref.module, member };
}

function normalize(module: string): string {
  return module.startsWith('node:') ? module.slice('node:'.length) : module;
}

/** The literal module a call loads: `require('m')`, `module.require('m')`, `import('m')`, `createRequire(...)('m')`. */
function loadedModule(call: Node): string | undefined {
  if (call.type !== 'call_expression') return undefined;
  const callee = call.childForFieldName('function');
  if (callee === null) return undefined;
  const loads =
    callee.type === 'import' ||
    (callee.type === 'identifier' && callee.text === 'require') ||
    (callee.type === 'member_expression' && callee.childForFieldName('property')?.text === 'require') ||
    (callee.type === 'call_expression' && /(^|\.)createRequire$/.test(callee.childForFieldName('function')?.text ?? ''));
  return loads ? stringValue(argumentsOf(call)[0]) : undefined;
}

/** `name`, `globalThis.name` (or window/global/self), `(0, name)`: the global `name` however it is reached. */
function isGlobal(callee: Node, name: string): boolean {
  if (callee.type === 'identifier') return callee.text === name;
  if (callee.type === 'member_expression') return isMember(callee, [...globalObjects], name);
  if (callee.type === 'subscript_expression') {
    const object = callee.childForFieldName('object');
    return object !== null && globalObjects.has(object.text) && stringValue(callee.childForFieldName('index')) === name;
  }
  if (callee.type === 'parenthesized_expression') {
    const inner = callee.namedChildren.find((child) => child.type !== 'comment');
    if (inner?.type === 'sequence_expression') {
      const last = inner.namedChildren.filter((child) => child.type !== 'comment').pop();
      return last !== undefined && isGlobal(last, name);
    }
    return inner !== undefined && isGlobal(inner, name);
  }
  return false;
}

function isMember(node: Node, objects: readonly string[], property: string): boolean {
  if (node.type !== 'member_expression') return false;
  const object = node.childForFieldName('object');
  return object?.type === 'identifier' && objects.includes(object.text) && node.childForFieldName('property')?.text === property;
}

/** True when `node` has the anonymous keyword token `word` as a direct child (`import type`, `export type`, `{ type X }`). */
function hasKeyword(node: Node, word: string): boolean {
  for (const child of node.children) if (child !== null && !child.isNamed && child.type === word) return true;
  return false;
}

function argumentsOf(call: Node): Node[] {
  const list = call.childForFieldName('arguments');
  // Tagged templates (fn`x`) pass a template, not an argument list.
  if (list === null || list.type !== 'arguments') return [];
  return list.namedChildren.filter((child) => child.type !== 'comment');
}

/** The value of a string literal or of a template string without `${}` substitutions; undefined for anything else. */
function stringValue(node: Node | null | undefined): string | undefined {
  if (node === null || node === undefined) return undefined;
  if (node.type !== 'string' && node.type !== 'template_string') return undefined;
  let value = '';
  for (const child of node.namedChildren) {
    if (child.type === 'template_substitution') return undefined;
    if (child.type === 'string_fragment') value += child.text;
    if (child.type === 'escape_sequence') value += decodeEscapes(child.text);
  }
  return value;
}

function describeArgument(node: Node): string {
  if (node.type === 'template_string') return 'a template with substitutions';
  if (node.type === 'binary_expression') return 'a concatenation';
  if (node.type === 'identifier') return `the variable ${abbreviate(node.text)}`;
  return `a ${node.type.replace(/_/g, ' ')}`;
}

function abbreviate(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length > 60 ? `${oneLine.slice(0, 57)}...` : oneLine;
}
