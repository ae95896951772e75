import path from 'node:path';
import { SandboxRunnerServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({ name: 'sandbox-runner', packageDir: path.join(__dirname, '..'), definition: SandboxRunnerServiceDefinition });
