import { createServer } from 'node:net';
import { freePort, freePorts } from './free-port';

describe('freePort', () => {
  it('returns a port that can be bound on 127.0.0.1', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });

  it('freePorts returns distinct ports', async () => {
    const ports = await freePorts(3);
    expect(new Set(ports).size).toBe(3);
  });
});
