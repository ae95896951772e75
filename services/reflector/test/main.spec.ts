import path from 'node:path';
import { ReflectorServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({ name: 'reflector', packageDir: path.join(__dirname, '..'), definition: ReflectorServiceDefinition });
