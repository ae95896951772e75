import path from 'node:path';
import { CoderServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({ name: 'coder', packageDir: path.join(__dirname, '..'), definition: CoderServiceDefinition });
