/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'reflector', rootDir: __dirname };
