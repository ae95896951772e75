// Lint rules that carry the architecture: Nx module boundaries by project tag,
// NATS only in libs/bus, dockerode only in services/sandbox-runner, no
// floating promises, no import cycles, no `export *` from a public surface.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

const natsPackages = { group: ['nats', '@nats-io/*'], message: 'NATS is only imported by libs/bus; use the Transport from @ratchet/bus.' };
const dockerPackages = { group: ['dockerode'], message: 'dockerode is only imported by services/sandbox-runner.' };
const testingLib = { group: ['@ratchet/testing'], message: '@ratchet/testing is for tests only.' };

export default [
  // services/safety/corpus holds sample programs, dangerous on purpose, that the safety tests scan; they are data, not code of ours.
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.nx/**', 'libs/contracts/src/gen/**', 'services/web/app/src/gen/**', '**/jest.config.js', '**/vite.config.mts', 'jest.preset.js', 'services/safety/corpus/**'] },
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  {
    files: ['**/*.ts', '**/*.mts', '**/*.tsx'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:util'] },
            { sourceTag: 'type:platform', onlyDependOnLibsWithTags: ['type:platform', 'type:util', 'type:contracts', 'type:testing'] },
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:platform', 'type:util', 'type:contracts'] },
            { sourceTag: 'type:service', onlyDependOnLibsWithTags: ['type:platform', 'type:util', 'type:contracts', 'type:testing'] },
            // The CLI is the composition root of embedded mode: it may host the services in-process.
            { sourceTag: 'type:client', onlyDependOnLibsWithTags: ['type:platform', 'type:util', 'type:contracts', 'type:testing', 'type:service'] },
            // Deployment tests run the built services as a user would; they may read the libs' definitions (metrics, config).
            { sourceTag: 'type:deploy', onlyDependOnLibsWithTags: ['type:platform', 'type:util', 'type:contracts', 'type:testing'] },
          ],
        },
      ],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      // A cycle cannot pass through an installed package: never parse node_modules (PGlite's 375 KB chunks overflow the parser's stack).
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'no-restricted-syntax': ['error', { selector: 'ExportAllDeclaration', message: 'List exports by name; no `export *`.' }],
      'no-restricted-imports': ['error', { patterns: [natsPackages, dockerPackages, testingLib] }],
    },
  },
  {
    // Tests and benchmarks may use the testing fixtures.
    files: ['**/*.spec.ts', '**/*.spec.tsx', '**/test/**/*.ts', '**/bench/**/*.ts', '**/bench/**/*.mts', '**/src/testing.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [natsPackages, dockerPackages] }],
      // Tests index into arrays they have just asserted on.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['libs/bus/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [dockerPackages, testingLib] }] },
  },
  {
    files: ['libs/bus/**/*.spec.ts', 'libs/bus/test/**/*.ts', 'libs/bus/bench/**/*.ts', 'libs/bus/bench/**/*.mts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [dockerPackages] }], '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    files: ['services/sandbox-runner/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [natsPackages, testingLib] }] },
  },
  {
    files: ['services/sandbox-runner/**/*.spec.ts', 'services/sandbox-runner/test/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [natsPackages] }], '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    // libs/testing is itself test code; services are never imported by anything.
    files: ['libs/testing/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [natsPackages, dockerPackages] }] },
  },
];
