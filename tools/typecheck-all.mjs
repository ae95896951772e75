#!/usr/bin/env node
// Type-checks every project's `tsconfig.json` (what `nx run-many -t
// typecheck` does, project by project) in as few TypeScript programs as
// their compiler options allow: projects with the same options share one
// program, so the libraries every project imports are read and checked once,
// not once per project. Same files, same options, same diagnostics; `npm run
// typecheck` keeps the per-project targets and their cache.
//
//   node tools/typecheck-all.mjs        exits 1 when any file has an error
import { readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');
const projects = ['libs', 'services'].flatMap((dir) => readdirSync(path.join(root, dir)).map((name) => path.join(root, dir, name))).concat(path.join(root, 'deploy'));
// Each project's tsconfig.json, and one a folder down (the dashboard's browser app, `services/web/app`), as their typecheck targets run them.
const configs = projects
  .flatMap((project) => [
    path.join(project, 'tsconfig.json'),
    ...readdirSync(project, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && !['node_modules', 'dist'].includes(entry.name))
      .map((entry) => path.join(project, entry.name, 'tsconfig.json')),
  ])
  .filter((file) => existsSync(file));

const format = { getCanonicalFileName: (name) => name, getCurrentDirectory: () => root, getNewLine: () => '\n' };
const groups = new Map();
const problems = [];
for (const file of configs) {
  const parsed = ts.getParsedCommandLineOfConfigFile(file, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => problems.push(diagnostic) });
  if (parsed === undefined) continue;
  problems.push(...parsed.errors);
  // The options as the project sets them; where its config file is does not change how a file is checked.
  const { configFilePath: _ignored, ...options } = parsed.options;
  const key = JSON.stringify(options, Object.keys(options).sort());
  const group = groups.get(key) ?? { options, files: new Set(), projects: [] };
  for (const name of parsed.fileNames) group.files.add(name);
  group.projects.push(path.relative(root, path.dirname(file)) || '.');
  groups.set(key, group);
}

let errors = problems.length;
if (problems.length > 0) process.stdout.write(ts.formatDiagnosticsWithColorAndContext(problems, format));
for (const group of groups.values()) {
  const started = Date.now();
  const program = ts.createProgram({ rootNames: [...group.files], options: group.options });
  const diagnostics = ts.getPreEmitDiagnostics(program);
  errors += diagnostics.filter((diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error).length;
  if (diagnostics.length > 0) process.stdout.write(ts.formatDiagnosticsWithColorAndContext(diagnostics, format));
  console.log(`typecheck-all: ${group.projects.length} project(s), ${group.files.size} files, ${diagnostics.length} problem(s), ${((Date.now() - started) / 1000).toFixed(1)} s: ${group.projects.join(', ')}`);
}
process.exit(errors > 0 ? 1 : 0);
