/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'contracts', rootDir: __dirname };
