/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'config', rootDir: __dirname };
