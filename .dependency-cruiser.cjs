// Import cycles between a project's own modules, type-only imports included:
// eslint's import-x/no-cycle skips `import type`, and a cycle of types still
// ties two modules together (neither can be understood or moved alone).
// Run by `npm run lint:cycles` (part of the `lint` target of the workspace).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module reaches itself through its imports (type-only ones too); move the shared part into a module both import.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    // Keep `import type` in the graph: that is what eslint's rule cannot see.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    // Cycles within the repository only: installed packages and build output are not followed.
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', '/dist/', '/gen/', '\\.d\\.ts$'] },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['@ratchet/source', 'import', 'require', 'node', 'default'], extensions: ['.ts', '.mts', '.js'] },
  },
};
