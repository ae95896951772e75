/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'coder', rootDir: __dirname };
