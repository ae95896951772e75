import path from 'node:path';
import { SafetyServiceDefinition } from '@ratchet/contracts';
import { main, packageVersion } from '@ratchet/runtime';
import { commandPolicyOf, createSafetyService, safetyConfigSchema } from './index';

// The grammars ship with the package; the command policy is the `commands` section of config/safety.yaml.
main({
  name: 'safety',
  version: packageVersion(path.join(__dirname, '..')),
  definition: SafetyServiceDefinition,
  schema: safetyConfigSchema,
  start: async ({ config }) => {
    const safety = await createSafetyService({ commandPolicy: commandPolicyOf(config.commands) });
    return { implementation: safety.implementation, close: () => safety.close() };
  },
});
