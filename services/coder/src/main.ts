import path from 'node:path';
import { CoderServiceDefinition } from '@ratchet/contracts';
import { main, packageVersion } from '@ratchet/runtime';

// Serves Health on the bus; the domain RPCs arrive with the issues that give them behaviour.
main({ name: 'coder', version: packageVersion(path.join(__dirname, '..')), definition: CoderServiceDefinition });
