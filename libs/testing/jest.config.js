/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'testing', rootDir: __dirname };
