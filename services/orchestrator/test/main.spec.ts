import path from 'node:path';
import { OrchestratorServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({ name: 'orchestrator', packageDir: path.join(__dirname, '..'), definition: OrchestratorServiceDefinition });
