/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'sandbox-runner', rootDir: __dirname };
