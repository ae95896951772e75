import path from 'node:path';
import { SafetyServiceDefinition } from '@ratchet/contracts';
import { main, packageVersion } from '@ratchet/runtime';
import { createSafetyService } from './index';

// Static analysis needs no config beyond the shared sections: the grammars ship with the package.
main({
  name: 'safety',
  version: packageVersion(path.join(__dirname, '..')),
  definition: SafetyServiceDefinition,
  start: async () => {
    const safety = await createSafetyService();
    return { implementation: safety.implementation, close: () => safety.close() };
  },
});
