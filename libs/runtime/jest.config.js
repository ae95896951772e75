/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'runtime', rootDir: __dirname };
