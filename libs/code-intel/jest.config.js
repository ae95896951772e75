/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'code-intel', rootDir: __dirname };
