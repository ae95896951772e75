import path from 'node:path';
import { TesterServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({ name: 'tester', packageDir: path.join(__dirname, '..'), definition: TesterServiceDefinition });
