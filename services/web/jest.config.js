/** @type {import('jest').Config} */
module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'web',
  rootDir: __dirname,
  // The app's pure modules (formatting, the event timeline, diffs) are tested here too; its components are tested in a browser (services/cli/test/ui.spec.ts).
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts', '<rootDir>/app/src/**/*.spec.ts'],
};
