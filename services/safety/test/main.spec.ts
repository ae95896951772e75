import path from 'node:path';
import { SafetyServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({ name: 'safety', packageDir: path.join(__dirname, '..'), definition: SafetyServiceDefinition });
