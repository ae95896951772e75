/** @type {import('jest').Config} */
module.exports = { ...require('../jest.preset.js'), displayName: 'deploy', rootDir: __dirname };
