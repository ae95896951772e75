import path from 'node:path';
import { configDirectoryOf, plannerConfigSection, reprompterConfigSection } from '@ratchet/agent';
import { loadPrompts } from '@ratchet/prompting';
import { extendConfigSchema } from '@ratchet/config';
import { PlannerServiceDefinition } from '@ratchet/contracts';
import { ChatRole, createRoleModel, modelConfigSection, pricesConfigSection } from '@ratchet/llm';
import { main, packageVersion } from '@ratchet/runtime';
import { createPlannerService } from './index';

// The planner as its own process: the planner's and the reprompter's models (config/models.yaml, RATCHET_MODEL_*),
// their prompt budgets (config/planner.yaml, RATCHET_PLANNER_PROMPT_BUDGET_TOKENS, ...) and prompts from the config directory.
main({
  name: 'planner',
  // It holds the model's key: its replies and errors are redacted before they leave (a provider may echo the key).
  redactReplies: true,
  version: packageVersion(path.join(__dirname, '..')),
  definition: PlannerServiceDefinition,
  schema: extendConfigSchema({ model: modelConfigSection, prices: pricesConfigSection, planner: plannerConfigSection, reprompter: reprompterConfigSection }),
  optionalFiles: ['models.yaml'],
  start: async ({ config }) => {
    const roleModel = await createRoleModel(config.model, config.prices, ChatRole.PLANNER);
    const reprompterModel = await createRoleModel(config.model, config.prices, ChatRole.REPROMPTER);
    const settings = { planner: config.planner, reprompter: config.reprompter };
    return { implementation: createPlannerService({ roleModel, reprompterModel, prompts: loadPrompts(configDirectoryOf()), settings }).implementation };
  },
});
