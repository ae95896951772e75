import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';
import tar from 'tar-stream';

/**
 * A PEP 503 simple index on 127.0.0.1 for the dependency tests, serving
 * wheels and sdists the tests build here from sources (no PyPI needed).
 */

/** A zip archive of `files` (deflated), as a wheel is. */
export function zipArchive(files: Readonly<Record<string, string | Buffer>>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(files)) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    const packed = deflateRawSync(data);
    const nameBytes = Buffer.from(name);
    const checksum = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0, 6);
    local.writeUInt16LE(8, 8);
    local.writeUInt16LE(0, 10);
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(checksum, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt16LE(0, 12);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(checksum, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(0o100644 * 0x10000, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + packed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

function recordHash(data: Buffer): string {
  return `sha256=${createHash('sha256').update(data).digest('base64url')}`;
}

/** A pure-Python wheel of `name` `version` holding `files` (package sources), requiring `requires`. */
export function wheel(name: string, version: string, files: Readonly<Record<string, string | Buffer>>, requires: readonly string[] = []): { filename: string; data: Buffer } {
  const distInfo = `${name}-${version}.dist-info`;
  const all: Record<string, string | Buffer> = {
    ...files,
    [`${distInfo}/METADATA`]: `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\nSummary: a test package\n${requires.map((requirement) => `Requires-Dist: ${requirement}\n`).join('')}`,
    [`${distInfo}/WHEEL`]: 'Wheel-Version: 1.0\nGenerator: ratchet-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
  };
  const record = Object.entries(all).map(([path, content]) => {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    return `${path},${recordHash(data)},${data.length}`;
  });
  all[`${distInfo}/RECORD`] = `${[...record, `${distInfo}/RECORD,,`].join('\n')}\n`;
  return { filename: `${name}-${version}-py3-none-any.whl`, data: zipArchive(all) };
}

/** An sdist (a .tar.gz) of `name` `version` with `files` at its root directory. */
export async function sdist(name: string, version: string, files: Readonly<Record<string, string>>): Promise<{ filename: string; data: Buffer }> {
  const pack = tar.pack();
  const root = `${name}-${version}`;
  const all = { 'PKG-INFO': `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`, ...files };
  for (const [path, content] of Object.entries(all)) pack.entry({ name: `${root}/${path}`, mode: 0o644 }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return { filename: `${root}.tar.gz`, data: gzipSync(Buffer.concat(chunks)) };
}

export interface PackageIndex {
  /** The index's URL, http://127.0.0.1:PORT/simple. */
  readonly url: string;
  readonly port: number;
  /** Paths requested so far. */
  readonly requests: string[];
  close(): Promise<void>;
}

/**
 * Serves `packages` (project name -> files) as a PEP 503 index: /simple/,
 * /simple/<project>/ with a link per file (sha256 fragment), /files/<file>.
 * Projects named in `hang` get an answer that never comes (a registry that
 * stalls).
 */
export async function servePackageIndex(packages: Readonly<Record<string, readonly { filename: string; data: Buffer }[]>>, options: { readonly hang?: readonly string[] } = {}): Promise<PackageIndex> {
  const requests: string[] = [];
  const files = new Map(Object.values(packages).flatMap((list) => list.map((file) => [file.filename, file.data] as const)));
  const stalled = new Set<http.ServerResponse>();
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://index');
    requests.push(url.pathname);
    const project = /^\/simple\/([^/]+)\/?$/.exec(url.pathname)?.[1]?.toLowerCase().replace(/[-_.]+/g, '-');
    if (url.pathname === '/simple/' || url.pathname === '/simple') {
      response.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!DOCTYPE html><html><body>${Object.keys(packages).map((name) => `<a href="${name}/">${name}</a>`).join('\n')}</body></html>`);
    } else if (project !== undefined && options.hang?.includes(project)) {
      stalled.add(response);
    } else if (project !== undefined && packages[project] !== undefined) {
      const links = packages[project].map((file) => `<a href="../../files/${file.filename}#sha256=${createHash('sha256').update(file.data).digest('hex')}">${file.filename}</a>`);
      response.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!DOCTYPE html><html><body>\n${links.join('\n')}\n</body></html>`);
    } else if (url.pathname.startsWith('/files/') && files.has(url.pathname.slice('/files/'.length))) {
      const data = files.get(url.pathname.slice('/files/'.length)) ?? Buffer.alloc(0);
      response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': data.length }).end(data);
    } else {
      response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/simple`,
    port,
    requests,
    close: async () => {
      for (const response of stalled) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One version of a package for serveNpmRegistry: its files (package.json is made from the rest). */
export interface NpmPackage {
  readonly name: string;
  readonly version: string;
  readonly files: Readonly<Record<string, string>>;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly scripts?: Readonly<Record<string, string>>;
  readonly main?: string;
}

/**
 * A minimal npm registry on 127.0.0.1: GET /<name> answers the packument
 * (every version, dist-tags.latest the last), GET /<name>/-/<file>.tgz the
 * tarball (files under package/); unknown names are 404.
 */
export async function serveNpmRegistry(packages: readonly NpmPackage[]): Promise<PackageIndex> {
  const requests: string[] = [];
  const tarballs = new Map<string, Buffer>();
  for (const entry of packages) {
    const pack = tar.pack();
    const manifest = { name: entry.name, version: entry.version, main: entry.main ?? 'index.js', dependencies: entry.dependencies ?? {}, scripts: entry.scripts ?? {} };
    for (const [path, content] of Object.entries({ 'package.json': JSON.stringify(manifest, null, 2), ...entry.files })) pack.entry({ name: `package/${path}`, mode: 0o644 }, content);
    pack.finalize();
    const chunks: Buffer[] = [];
    for await (const chunk of pack) chunks.push(chunk as Buffer);
    tarballs.set(`/${entry.name}/-/${entry.name.split('/').at(-1)}-${entry.version}.tgz`, gzipSync(Buffer.concat(chunks)));
  }
  const server = http.createServer((request, response) => {
    const pathname = decodeURIComponent(new URL(request.url ?? '/', 'http://registry').pathname);
    requests.push(pathname);
    const tarball = tarballs.get(pathname);
    if (tarball !== undefined) {
      response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': tarball.length }).end(tarball);
      return;
    }
    const versions = packages.filter((entry) => `/${entry.name}` === pathname);
    if (versions.length === 0) {
      response.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"Not found"}');
      return;
    }
    const origin = `http://${request.headers.host ?? '127.0.0.1'}`;
    const packument = {
      name: versions[0]?.name,
      'dist-tags': { latest: versions.at(-1)?.version },
      versions: Object.fromEntries(
        versions.map((entry) => {
          const file = `/${entry.name}/-/${entry.name.split('/').at(-1)}-${entry.version}.tgz`;
          const data = tarballs.get(file) ?? Buffer.alloc(0);
          const integrity = `sha512-${createHash('sha512').update(data).digest('base64')}`;
          return [entry.version, { name: entry.name, version: entry.version, dependencies: entry.dependencies ?? {}, scripts: entry.scripts ?? {}, ...(entry.scripts?.['postinstall'] === undefined ? {} : { hasInstallScript: true }), dist: { tarball: `${origin}${file}`, integrity } }];
        }),
      ),
    };
    response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(packument));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
