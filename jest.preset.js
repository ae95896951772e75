// Shared Jest settings. SWC strips types without type-checking (that is the
// `typecheck` target's job), which keeps the suite fast.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
        module: { type: 'commonjs' },
        sourceMaps: 'inline',
      },
    ],
  },
  // Resolve workspace libraries to their TypeScript sources, so tests never
  // depend on a previous build.
  testEnvironmentOptions: {
    customExportConditions: ['@ratchet/source', 'node', 'require', 'default'],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
};
