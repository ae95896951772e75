import type { SafetyFinding } from '@ratchet/contracts';
import type { Node } from 'web-tree-sitter';
import { escapesWorkspace, finding, RuleId } from './findings';

const childProcessModules = new Set(['child_process', 'node:child_process']);
const fsModules = new Set(['fs', 'node:fs', 'fs/promises', 'node:fs/promises', 'fs-extra']);
const vmModules = new Set(['vm', 'node:vm']);
/** fs functions whose first argument is the path they modify. */
const fsPathWriters = new Set([
  'writeFile',
  'writeFileSync',
  'appendFile',
  'appendFileSync',
  'mkdir',
  'mkdirSync',
  'rm',
  'rmSync',
  'rmdir',
  'rmdirSync',
  'unlink',
  'unlinkSync',
  'createWriteStream',
  'truncate',
  'truncateSync',
  'chmod',
  'chmodSync',
  'open',
  'openSync',
]);
/** fs functions whose second argument is the path they write. */
const fsDestinationWriters = new Set(['rename', 'renameSync', 'copyFile', 'copyFileSync', 'cp', 'cpSync', 'symlink', 'symlinkSync', 'link', 'linkSync']);
const vmRunners = new Set(['runInNewContext', 'runInThisContext', 'runInContext', 'compileFunction']);

/** Findings of the JavaScript/TypeScript rules in one parsed file. */
export function checkJavaScript(root: Node, path: string, source: string): SafetyFinding[] {
  const findings: SafetyFinding[] = [];
  const bindings = new Map<string, string>();

  for (const statement of root.descendantsOfType('import_statement')) {
    const module = stringValue(statement.childForFieldName('source'));
    if (module === undefined) continue;
    if (childProcessModules.has(module)) findings.push(finding(RuleId.JS_CHILD_PROCESS, path, statement.startPosition, `imports ${module}, which runs programs`, source));
    for (const identifier of statement.descendantsOfType(['identifier'])) bindings.set(identifier.text, module);
    // import { writeFileSync as w } from 'fs' binds w to fs.writeFileSync.
    for (const specifier of statement.descendantsOfType('import_specifier')) {
      const name = specifier.childForFieldName('name')?.text;
      const alias = specifier.childForFieldName('alias')?.text ?? name;
      if (name !== undefined && alias !== undefined) bindings.set(alias, `${module}#${name}`);
    }
  }

  for (const call of root.descendantsOfType(['call_expression', 'new_expression'])) {
    const callee = call.childForFieldName(call.type === 'new_expression' ? 'constructor' : 'function');
    const args = call.childForFieldName('arguments');
    const positional = args === null ? [] : args.namedChildren.filter((child) => child.type !== 'comment');
    if (callee === null) continue;
    // require('child_process'), import('child_process')
    if ((callee.type === 'identifier' && callee.text === 'require') || callee.type === 'import') {
      const module = stringValue(positional[0]);
      if (module !== undefined && childProcessModules.has(module)) findings.push(finding(RuleId.JS_CHILD_PROCESS, path, call.startPosition, `loads ${module}, which runs programs`, source));
      const declarator = call.parent?.type === 'variable_declarator' ? call.parent : undefined;
      if (module !== undefined && declarator !== undefined) {
        const target = declarator.childForFieldName('name');
        if (target?.type === 'identifier') bindings.set(target.text, module);
        for (const property of target?.descendantsOfType(['shorthand_property_identifier_pattern']) ?? []) bindings.set(property.text, `${module}#${property.text}`);
      }
      continue;
    }
    if (callee.type === 'identifier' && callee.text === 'eval' && call.type === 'call_expression') {
      const first = positional[0];
      if (first === undefined || !isPlainString(first)) findings.push(finding(RuleId.JS_DYNAMIC_EVAL, path, call.startPosition, 'eval() of a string built at run time executes arbitrary code', source));
    }
    if (callee.type === 'identifier' && callee.text === 'Function') {
      findings.push(finding(RuleId.JS_FUNCTION_CONSTRUCTOR, path, call.startPosition, `${call.type === 'new_expression' ? 'new ' : ''}Function(...) compiles code from strings`, source));
    }
    const target = resolveMember(callee, bindings);
    if (target === undefined) continue;
    if (vmModules.has(target.module) && vmRunners.has(target.name)) findings.push(finding(RuleId.JS_VM, path, call.startPosition, `vm.${target.name}() runs code from strings`, source));
    if (childProcessModules.has(target.module)) findings.push(finding(RuleId.JS_CHILD_PROCESS, path, call.startPosition, `child_process.${target.name}() runs a program`, source));
    if (fsModules.has(target.module)) {
      const index = fsPathWriters.has(target.name) ? 0 : fsDestinationWriters.has(target.name) ? 1 : -1;
      const written = index < 0 ? undefined : stringValue(positional[index]);
      if (written !== undefined && escapesWorkspace(written)) findings.push(finding(RuleId.WRITE_OUTSIDE_WORKSPACE, path, call.startPosition, `writes to ${JSON.stringify(written)}, outside the workspace`, source));
    }
  }
  return findings;
}

/** `fs.writeFileSync`, `fs.promises.writeFile` or a bound `writeFileSync` -> module and function name. */
function resolveMember(callee: Node, bindings: ReadonlyMap<string, string>): { module: string; name: string } | undefined {
  if (callee.type === 'identifier') {
    const bound = bindings.get(callee.text);
    if (bound === undefined || !bound.includes('#')) return undefined;
    const [module, name] = bound.split('#') as [string, string];
    return { module, name };
  }
  if (callee.type !== 'member_expression') return undefined;
  const property = callee.childForFieldName('property')?.text;
  let object = callee.childForFieldName('object');
  if (property === undefined || object === null) return undefined;
  // fs.promises.writeFile
  if (object.type === 'member_expression' && object.childForFieldName('property')?.text === 'promises') object = object.childForFieldName('object');
  if (object?.type !== 'identifier') return undefined;
  const module = bindings.get(object.text);
  return module === undefined || module.includes('#') ? undefined : { module, name: property };
}

/** A string literal or a template string without substitutions. */
function isPlainString(node: Node): boolean {
  return node.type === 'string' || (node.type === 'template_string' && !node.namedChildren.some((child) => child.type === 'template_substitution'));
}

function stringValue(node: Node | null | undefined): string | undefined {
  if (node === null || node === undefined || !isPlainString(node)) return undefined;
  return node.text.slice(1, -1);
}
