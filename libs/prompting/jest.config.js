/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'prompting', rootDir: __dirname };
