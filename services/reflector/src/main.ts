import path from 'node:path';
import { ReflectorServiceDefinition } from '@ratchet/contracts';
import { main, packageVersion } from '@ratchet/runtime';

// Serves Health on the bus; the domain RPCs arrive with the issues that give them behaviour.
main({ name: 'reflector', version: packageVersion(path.join(__dirname, '..')), definition: ReflectorServiceDefinition });
