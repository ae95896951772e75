/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'safety', rootDir: __dirname };
