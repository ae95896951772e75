/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'llm', rootDir: __dirname };
