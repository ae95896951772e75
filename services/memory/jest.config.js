/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'memory', rootDir: __dirname };
