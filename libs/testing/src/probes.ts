import { get } from 'node:http';
import { connect } from 'node:net';

/** GETs `url` without keep-alive and resolves with the status code. */
export function httpStatus(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false, timeout: timeoutMs }, (response) => {
      response.resume();
      response.once('end', () => resolve(response.statusCode ?? 0));
      response.once('error', reject);
    });
    request.once('timeout', () => request.destroy(new Error(`GET ${url} timed out after ${timeoutMs} ms`)));
    request.once('error', reject);
  });
}

/** Resolves true once a TCP connection to 127.0.0.1:`port` is accepted. */
export function acceptsTcp(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => socket.destroy(new Error(`connecting to 127.0.0.1:${port} timed out after ${timeoutMs} ms`)));
    socket.once('error', reject);
  });
}
