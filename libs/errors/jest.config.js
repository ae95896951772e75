/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'errors', rootDir: __dirname };
