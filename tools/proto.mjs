#!/usr/bin/env node
// Protobuf pipeline for the contracts (protos/ -> libs/contracts/src, and the
// dashboard's browser types in services/web/app/src/gen).
//
//   node tools/proto.mjs generate   buf lint, buf generate, rebuild src/index.ts
//   node tools/proto.mjs check      regenerate into a temp dir and fail on drift,
//                                   buf lint, and buf breaking against HEAD~1
//
// Run through `npm run proto:gen` / `npm run proto:check`. Uses only Node
// builtins plus the workspace's own `typescript` (to list the generated
// exports) and `@bufbuild/buf` / `ts-proto` (through buf.gen.yaml).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const ts = require('typescript');

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Where the library's sources live, relative to an output root. */
const contractsSrc = path.join('libs', 'contracts', 'src');
/** Where buf.gen.yaml writes the services' contracts, relative to an output root. */
const genDir = path.join(contractsSrc, 'gen');
/** Where buf.gen.yaml writes the dashboard's types (no index: the app's types.ts picks what it uses). */
const browserGenDir = path.join('services', 'web', 'app', 'src', 'gen');
const indexFile = path.join(contractsSrc, 'index.ts');
const protoModule = 'protos';
const bufBin = path.join(repoRoot, 'node_modules', '.bin', process.platform === 'win32' ? 'buf.cmd' : 'buf');

class PipelineError extends Error {}

/** Runs a command in the repository root with inherited output; throws if it fails. */
function run(command, args, what) {
  const result = spawnSync(command, args, { cwd: repoRoot, stdio: 'inherit' });
  if (result.error) throw new PipelineError(`${what}: could not start ${command}: ${result.error.message}`);
  if (result.status !== 0) throw new PipelineError(`${what} failed (exit code ${result.status ?? result.signal}).`);
}

function buf(args, what) {
  if (!fs.existsSync(bufBin)) {
    throw new PipelineError(`buf not found at node_modules/.bin/buf; run \`npm ci\` in the repository root.`);
  }
  run(bufBin, args, what);
}

/** Lists files under `dir` recursively, as sorted POSIX paths relative to `dir`. */
function listFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  const files = [];
  const walk = (current) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else files.push(path.relative(dir, full).split(path.sep).join('/'));
    }
  };
  walk(dir);
  return files.sort();
}

/**
 * Lists the exports of each generated file with the TypeScript checker and
 * returns the text of index.ts. Type-only exports are re-exported with
 * `export type` (required under isolatedModules). Throws when two files export
 * the same name.
 */
function buildIndex(outRoot) {
  const genRoot = path.join(outRoot, genDir);
  const files = listFiles(genRoot).filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
  if (files.length === 0) throw new PipelineError(`buf generate wrote no TypeScript files to ${genDir}.`);

  // noResolve: only the generated files' own declarations matter, and the
  // temp output of `check` cannot see node_modules.
  const program = ts.createProgram(
    files.map((file) => path.join(genRoot, file)),
    { noResolve: true, noEmit: true, types: [], target: ts.ScriptTarget.ES2023, module: ts.ModuleKind.CommonJS },
  );
  const checker = program.getTypeChecker();
  const ownerByName = new Map();
  const blocks = [];
  for (const file of files) {
    const sourceFile = program.getSourceFile(path.join(genRoot, file));
    const moduleSymbol = sourceFile && checker.getSymbolAtLocation(sourceFile);
    if (!moduleSymbol) continue; // a file without exports is not a module
    const values = [];
    const types = [];
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
      const name = symbol.getName();
      if (name === 'default') throw new PipelineError(`gen/${file} has a default export, which the index cannot re-export by name.`);
      const previous = ownerByName.get(name);
      if (previous) {
        throw new PipelineError(
          `Export name collision: \`${name}\` is exported by both gen/${previous} and gen/${file}. ` +
            'Rename one of the proto definitions so every generated symbol is unique.',
        );
      }
      ownerByName.set(name, file);
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      (target.flags & ts.SymbolFlags.Value ? values : types).push(name);
    }
    const specifier = './' + path.posix.join('gen', file.replace(/\.ts$/, ''));
    const statement = (keyword, names) =>
      names.length === 0 ? '' : `${keyword} {\n${names.sort().map((name) => `  ${name},\n`).join('')}} from '${specifier}';\n`;
    blocks.push(statement('export', values) + statement('export type', types));
  }

  return (
    '// Generated by `npm run proto:gen` (tools/proto.mjs) from protos/. Do not edit.\n' +
    '// The public surface of @ratchet/contracts: every symbol of the ts-proto output\n' +
    '// under ./gen, re-exported by name.\n' +
    blocks.map((block) => `\n${block}`).join('')
  );
}

/** Runs buf generate into `outRoot` (the repository root or a temp dir) and writes index.ts there. */
function generateInto(outRoot) {
  const args = ['generate', '--template', 'buf.gen.yaml'];
  if (outRoot !== repoRoot) args.push('--output', outRoot);
  buf(args, 'buf generate');
  const index = buildIndex(outRoot);
  fs.mkdirSync(path.join(outRoot, contractsSrc), { recursive: true });
  fs.writeFileSync(path.join(outRoot, indexFile), index);
}

/** Compares the generated files of `expectedRoot` with the repository; returns one line per difference. */
function diffGenerated(expectedRoot) {
  const expected = new Map();
  const actual = new Map();
  for (const dir of [genDir, browserGenDir]) {
    const relative = (file) => path.posix.join(dir.split(path.sep).join('/'), file);
    for (const file of listFiles(path.join(expectedRoot, dir))) expected.set(relative(file), path.join(expectedRoot, dir, file));
    for (const file of listFiles(path.join(repoRoot, dir))) actual.set(relative(file), path.join(repoRoot, dir, file));
  }
  const index = indexFile.split(path.sep).join('/');
  expected.set(index, path.join(expectedRoot, indexFile));
  if (fs.existsSync(path.join(repoRoot, indexFile))) actual.set(index, path.join(repoRoot, indexFile));

  const differences = [];
  for (const name of [...new Set([...expected.keys(), ...actual.keys()])].sort()) {
    if (!actual.has(name)) {
      differences.push(`  missing    ${name} (generation creates it)`);
    } else if (!expected.has(name)) {
      differences.push(`  unexpected ${name} (generation does not create it)`);
    } else {
      const want = fs.readFileSync(expected.get(name), 'utf8').split('\n');
      const have = fs.readFileSync(actual.get(name), 'utf8').split('\n');
      const length = Math.max(want.length, have.length);
      let line = 0;
      while (line < length && want[line] === have[line]) line++;
      if (line < length) differences.push(`  changed    ${name} (first difference at line ${line + 1})`);
    }
  }
  return differences;
}

/** True when `git show <ref>:<file>` would succeed. */
function gitHas(ref, file) {
  const result = spawnSync('git', ['cat-file', '-e', `${ref}:${file}`], { cwd: repoRoot, stdio: 'ignore' });
  return result.status === 0;
}

function generate() {
  buf(['lint'], 'buf lint');
  generateInto(repoRoot);
  console.log(`proto: generated ${genDir}, ${indexFile} and ${browserGenDir}`);
}

function check() {
  buf(['lint'], 'buf lint');

  const tempRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'ratchet-proto-'));
  try {
    generateInto(tempRoot);
    const differences = diffGenerated(tempRoot);
    if (differences.length > 0) {
      throw new PipelineError(
        `Generated contracts are out of date (${differences.length} file(s)):\n${differences.join('\n')}\n` +
          'Generated code is never edited by hand: run `npm run proto:gen` and commit the result.',
      );
    }
  } finally {
    fs.rmSync(tempRoot, { recursive: true, force: true });
  }
  console.log('proto: generated contracts are up to date');

  if (gitHas('HEAD~1', 'buf.yaml')) {
    buf(['breaking', protoModule, '--against', `.git#ref=HEAD~1,subdir=${protoModule}`], 'buf breaking (against HEAD~1)');
    console.log('proto: no breaking changes against HEAD~1');
  } else {
    console.log('proto: HEAD~1 has no buf.yaml; skipping buf breaking');
  }
}

const commands = { generate, check };
const command = process.argv[2];
if (!Object.hasOwn(commands, command)) {
  console.error('usage: node tools/proto.mjs <generate|check>');
  process.exit(2);
}
try {
  commands[command]();
} catch (error) {
  if (!(error instanceof PipelineError)) throw error;
  console.error(`proto ${command}: ${error.message}`);
  process.exitCode = 1;
}
