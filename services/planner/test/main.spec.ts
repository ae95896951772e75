import path from 'node:path';
import { PlannerServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

serviceProcessContract({ name: 'planner', packageDir: path.join(__dirname, '..'), definition: PlannerServiceDefinition });
