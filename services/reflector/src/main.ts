import path from 'node:path';
import { auditorConfigSection, configDirectoryOf, reflectorConfigSection, reviewerConfigSection } from '@ratchet/agent';
import { loadPrompts } from '@ratchet/prompting';
import { extendConfigSchema } from '@ratchet/config';
import { ReflectorServiceDefinition } from '@ratchet/contracts';
import { ChatRole, createRoleModel, modelConfigSection, pricesConfigSection } from '@ratchet/llm';
import { main, packageVersion } from '@ratchet/runtime';
import { createReflectorService } from './index';

// The reflector as its own process: the reflector's, reviewer's and auditor's models (config/models.yaml, RATCHET_MODEL_*),
// their prompt budgets (config/reflector.yaml, RATCHET_REFLECTOR_PROMPT_BUDGET_TOKENS, ...) and prompts from the config directory.
main({
  name: 'reflector',
  // It holds the model's key: its replies and errors are redacted before they leave (a provider may echo the key).
  redactReplies: true,
  version: packageVersion(path.join(__dirname, '..')),
  definition: ReflectorServiceDefinition,
  schema: extendConfigSchema({ model: modelConfigSection, prices: pricesConfigSection, reflector: reflectorConfigSection, reviewer: reviewerConfigSection, auditor: auditorConfigSection }),
  optionalFiles: ['models.yaml'],
  start: async ({ config }) => {
    const roleModel = await createRoleModel(config.model, config.prices, ChatRole.REFLECTOR);
    const reviewerModel = await createRoleModel(config.model, config.prices, ChatRole.REVIEWER);
    const auditorModel = await createRoleModel(config.model, config.prices, ChatRole.AUDITOR);
    const settings = { reflector: config.reflector, reviewer: config.reviewer, auditor: config.auditor };
    return { implementation: createReflectorService({ roleModel, reviewerModel, auditorModel, prompts: loadPrompts(configDirectoryOf()), settings }).implementation };
  },
});
