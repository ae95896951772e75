import path from 'node:path';
import { TesterServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

// The model is only called per request, so an endpoint that is never reached is enough to start.
serviceProcessContract({
  name: 'tester',
  packageDir: path.join(__dirname, '..'),
  definition: TesterServiceDefinition,
  env: { RATCHET_MODEL_BASE_URL: 'http://127.0.0.1:9/v1', RATCHET_MODEL_NAME: 'unused-model' },
});
