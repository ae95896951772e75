/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'telemetry', rootDir: __dirname };
