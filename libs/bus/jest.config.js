/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'bus', rootDir: __dirname };
