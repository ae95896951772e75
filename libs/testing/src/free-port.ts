import { createServer } from 'node:net';

/**
 * Finds a TCP port on 127.0.0.1 that is free right now, by binding port 0 and
 * closing the listener again. Another process may take the port before the
 * caller binds it; fixtures accept that small race.
 *
 * @returns a port number in the kernel's ephemeral range.
 * @throws the listener's error when 127.0.0.1 cannot be bound.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : undefined;
      server.close(() => {
        if (port === undefined) reject(new Error('could not read the port of a listener bound to 127.0.0.1:0'));
        else resolve(port);
      });
    });
  });
}

/** Finds `count` distinct free ports (freePort alone may hand out the same one twice). */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
