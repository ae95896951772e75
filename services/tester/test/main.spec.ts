import { describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { SANDBOX_JOB_QUEUE } from '@ratchet/agent';
import { busRoles } from '@ratchet/bus';
import { TesterServiceDefinition } from '@ratchet/contracts';
import { serviceProcessContract } from '@ratchet/runtime/testing';

// The model is only called per request, so an endpoint that is never reached is enough to start.
serviceProcessContract({
  name: 'tester',
  packageDir: path.join(__dirname, '..'),
  definition: TesterServiceDefinition,
  env: { RATCHET_MODEL_BASE_URL: 'http://127.0.0.1:9/v1', RATCHET_MODEL_NAME: 'unused-model' },
});

describe('NATS role', () => {
  it('enqueues on the queue its shipped NATS permissions allow, and the runners work that queue', () => {
    expect(busRoles.tester.enqueues).toEqual([SANDBOX_JOB_QUEUE]);
    expect(busRoles['sandbox-runner'].works).toEqual([SANDBOX_JOB_QUEUE]);
  });
});
