// A small JSON HTTP server on localhost.
import http from 'node:http';

const notes: string[] = [];

export function start(port = 3000): http.Server {
  const server = http.createServer((request, response) => {
    if (request.method === 'POST') {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        notes.push(body);
        response.writeHead(201).end();
      });
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(notes));
  });
  return server.listen(port, '127.0.0.1');
}
