import { gzipSync } from 'node:zlib';
import { startOtlpReceiver } from './otlp-receiver';

// The receiver as an exporter sees it. What the SDK's own exporters send
// (protobuf and JSON) is covered by libs/telemetry/test/register.spec.ts.

const jsonExport = {
  resourceSpans: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'planner' } }] },
      scopeSpans: [
        {
          scope: { name: 'ratchet' },
          spans: [
            {
              traceId: '0AF7651916CD43DD8448EB211C80319C',
              spanId: 'b7ad6b7169203331',
              parentSpanId: '',
              name: 'phase planning',
              kind: 1,
              startTimeUnixNano: '1700000000000000000',
              endTimeUnixNano: '1700000000500000000',
              attributes: [
                { key: 'ratchet.task_id', value: { stringValue: 't-1' } },
                { key: 'ratchet.tokens', value: { intValue: '9007199254740993' } },
                { key: 'ratchet.retry', value: { boolValue: true } },
                { key: 'ratchet.cost_usd', value: { doubleValue: 0.25 } },
                { key: 'ratchet.paths', value: { arrayValue: { values: [{ stringValue: 'a.py' }] } } },
              ],
              links: [{ traceId: '0af7651916cd43dd8448eb211c80319d', spanId: '00f067aa0ba902b7' }],
              status: { code: 2, message: 'boom' },
            },
          ],
        },
      ],
    },
  ],
};

describe('startOtlpReceiver', () => {
  it('takes OTLP/JSON exports, gzipped or not, and keeps their spans by trace', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const plain = await fetch(`${receiver.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(jsonExport) });
      expect(plain.status).toBe(200);
      expect(await plain.text()).toBe('{}');
      const gzipped = await fetch(`${receiver.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(JSON.stringify(jsonExport)) });
      expect(gzipped.status).toBe(200);

      expect(receiver.requests()).toBe(2);
      const [span] = receiver.trace('0af7651916cd43dd8448eb211c80319c');
      expect(span).toEqual({
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        parentSpanId: undefined,
        name: 'phase planning',
        kind: 1,
        serviceName: 'planner',
        resource: { 'service.name': 'planner' },
        // A 64-bit integer past 2^53 stays exact.
        attributes: { 'ratchet.task_id': 't-1', 'ratchet.tokens': 9007199254740993n, 'ratchet.retry': true, 'ratchet.cost_usd': 0.25, 'ratchet.paths': ['a.py'] },
        links: [{ traceId: '0af7651916cd43dd8448eb211c80319d', spanId: '00f067aa0ba902b7' }],
        status: { code: 2, message: 'boom' },
        startTimeUnixNano: 1700000000000000000n,
        endTimeUnixNano: 1700000000500000000n,
      });
      expect(receiver.spans()).toHaveLength(2);
      receiver.reset();
      expect(receiver.spans()).toEqual([]);
    } finally {
      await receiver.stop();
    }
  });

  it('answers what a collector would to the wrong path, method, type or bytes, and records the rejected', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const post = (path: string, type: string, body: string | Uint8Array) => fetch(`${receiver.url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });
      expect((await post('/v1/metrics', 'application/json', '{}')).status).toBe(404);
      expect((await fetch(`${receiver.url}/v1/traces`)).status).toBe(405);
      expect((await post('/v1/traces', 'text/plain', 'spans')).status).toBe(415);
      // Field 1, length-delimited, longer than the body.
      expect((await post('/v1/traces', 'application/x-protobuf', new Uint8Array([0x0a, 0x05, 0x01]))).status).toBe(400);
      expect((await post('/v1/traces', 'application/json', '{not json')).status).toBe(400);
      expect(receiver.rejected()).toEqual([expect.stringContaining('text/plain'), expect.stringContaining('past the end'), expect.stringContaining('undecodable application/json')]);
      expect(receiver.spans()).toEqual([]);
    } finally {
      await receiver.stop();
    }
  });

  it('never answers when told to hang, until it stops', async () => {
    const receiver = await startOtlpReceiver({ answer: false });
    const pending = fetch(`${receiver.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(jsonExport) }).then(
      () => 'answered',
      () => 'cut off',
    );
    const settled = await Promise.race([pending, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 300))]);
    expect(settled).toBe('still waiting');
    expect(receiver.requests()).toBe(1);
    expect(receiver.spans()).toEqual([]);
    await receiver.stop();
    expect(await pending).toBe('cut off');
  });
});
