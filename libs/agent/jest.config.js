/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'agent', rootDir: __dirname };
