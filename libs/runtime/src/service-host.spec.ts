import { createClient, InProcessTransport } from '@ratchet/bus';
import { CreatePlanRequest, CreatePlanResponse, HealthStatus, PlannerServiceDefinition } from '@ratchet/contracts';
import { hostService } from './service-host';

describe('hostService', () => {
  it('serves Health with the bus as a required dependency, and drains domain calls on stop', async () => {
    const transport = new InProcessTransport();
    let finishPlan: (() => void) | undefined;
    const running = hostService(
      {
        name: 'planner',
        version: '0.9.0',
        definition: PlannerServiceDefinition,
        implementation: {
          createPlan: () => new Promise<CreatePlanResponse>((resolve) => (finishPlan = () => resolve(CreatePlanResponse.fromPartial({})))),
        },
        checks: [{ name: 'model:planner', required: false, check: async () => ({ ok: false, detail: 'no endpoint configured' }) }],
      },
      { transport, instanceId: 'test-1' },
    );
    const client = createClient(transport, PlannerServiceDefinition);

    const health = await client.health({});
    expect(health).toEqual(
      expect.objectContaining({
        service: 'planner',
        version: '0.9.0',
        instanceId: 'test-1',
        status: HealthStatus.HEALTH_STATUS_DEGRADED,
        dependencies: [
          { name: 'bus:inprocess', status: HealthStatus.HEALTH_STATUS_SERVING, detail: 'connected' },
          { name: 'model:planner', status: HealthStatus.HEALTH_STATUS_NOT_SERVING, detail: 'no endpoint configured' },
        ],
      }),
    );

    const plan = client.createPlan(CreatePlanRequest.fromPartial({ goal: 'a TODO CLI' }), { timeoutMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running.server.inFlight).toBe(1);
    const stopped = running.stop(5_000);
    setTimeout(() => finishPlan?.(), 100);
    await stopped;
    await expect(plan).resolves.toBeDefined();
    await transport.close();
  });
});
