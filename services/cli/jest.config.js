/** @type {import('jest').Config} */
module.exports = {
  ...require('../../jest.preset.js'),
  displayName: 'cli',
  rootDir: __dirname,
  // The end-to-end files mostly wait on services, sandboxes and Postgres (0.6 of a core on average when run
  // one at a time): two at once cut the suite from 26.5 to 20 minutes on a 2-core machine, CI's critical path.
  maxWorkers: 2,
};
