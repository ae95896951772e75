/** @type {import('jest').Config} */
module.exports = { ...require('../../jest.preset.js'), displayName: 'grpc-api', rootDir: __dirname };
