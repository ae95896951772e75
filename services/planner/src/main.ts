import path from 'node:path';
import { PlannerServiceDefinition } from '@ratchet/contracts';
import { main, packageVersion } from '@ratchet/runtime';

// Serves Health on the bus; the domain RPCs arrive with the issues that give them behaviour.
main({ name: 'planner', version: packageVersion(path.join(__dirname, '..')), definition: PlannerServiceDefinition });
