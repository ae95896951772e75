import path from 'node:path';
import { coderConfigSection, configDirectoryOf } from '@ratchet/agent';
import { loadDefinitionExtractor } from '@ratchet/code-intel';
import { loadPrompts } from '@ratchet/prompting';
import { extendConfigSchema } from '@ratchet/config';
import { CoderServiceDefinition } from '@ratchet/contracts';
import { ChatRole, createRoleModel, modelConfigSection, pricesConfigSection } from '@ratchet/llm';
import { main, packageVersion } from '@ratchet/runtime';
import { createCoderService } from './index';

// The coder as its own process: its model (config/models.yaml, RATCHET_MODEL_*), its `coder` section and prompts from the config directory.
main({
  name: 'coder',
  // It holds the model's key: its replies and errors are redacted before they leave (a provider may echo the key).
  redactReplies: true,
  version: packageVersion(path.join(__dirname, '..')),
  definition: CoderServiceDefinition,
  schema: extendConfigSchema({ model: modelConfigSection, prices: pricesConfigSection, coder: coderConfigSection }),
  optionalFiles: ['models.yaml'],
  start: async ({ config, transport }) => {
    const roleModel = await createRoleModel(config.model, config.prices, ChatRole.CODER);
    // The bus serves agent mode: sandbox sessions on the runners, the command policy, tool steps to the orchestrator.
    const extractor = () => loadDefinitionExtractor();
    return { implementation: createCoderService({ roleModel, prompts: loadPrompts(configDirectoryOf()), settings: config.coder, transport, extractor }).implementation };
  },
});
