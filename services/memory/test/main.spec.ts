import path from 'node:path';
import { MemoryServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({ name: 'memory', packageDir: path.join(__dirname, '..'), definition: MemoryServiceDefinition });
