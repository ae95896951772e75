import path from 'node:path';
import { OrchestratorServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({
  name: 'orchestrator',
  packageDir: path.join(__dirname, '..'),
  definition: OrchestratorServiceDefinition,
  postgres: true,
  dependencies: ['postgres'],
  env: { RATCHET_GRPC_ADDRESS: '127.0.0.1:0' },
});
