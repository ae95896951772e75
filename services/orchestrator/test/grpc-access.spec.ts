import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ErrorCode } from '@ratchet/errors';
import { hashToken } from '@ratchet/grpc-api';
import { accessOf, isLoopback } from '../src/adapters/grpc-access';
import { loadUsersFile, parseUsers } from '../src/adapters/users-file';

const directory = mkdtempSync(path.join(os.tmpdir(), 'ratchet-users-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const usersFile = (text: string) => {
  const file = path.join(directory, `users-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
};
const none = { tokens: '', allowUnauthenticated: false };

describe('accessOf', () => {
  it('listens on loopback only, and says so, when nobody is authenticated', () => {
    expect(accessOf(none)).toMatchObject({ address: '127.0.0.1:50051', authenticated: false, loopback: true });
    expect(accessOf({ ...none, address: '[::1]:7000' })).toMatchObject({ authenticated: false, loopback: true });
  });

  it('refuses to listen beyond loopback without authentication unless explicitly allowed', () => {
    expect(() => accessOf({ ...none, address: '0.0.0.0:50051' })).toThrow(expect.objectContaining({ code: ErrorCode.CONFIG_INVALID, message: expect.stringMatching(/0\.0\.0\.0:50051 is reachable from other hosts.*RATCHET_GRPC_USERS_FILE.*RATCHET_GRPC_ALLOW_UNAUTHENTICATED=true/) }));
    expect(accessOf({ ...none, address: '0.0.0.0:50051', allowUnauthenticated: true })).toMatchObject({ authenticated: false, loopback: false });
  });

  it('listens everywhere by default once clients are authenticated', () => {
    expect(accessOf({ ...none, tokens: 'a-token, another' })).toMatchObject({ address: '0.0.0.0:50051', authenticated: true });
    const access = accessOf({ ...none, tokens: 'a-token' });
    expect(access.authenticate?.({ token: 'a-token', certificateNames: [] })).toMatchObject({ name: 'token-1', team: 'default' });
    expect(accessOf({ ...none, clientCaFile: 'ca.pem' }).authenticate?.({ certificateNames: ['ci.example'] })).toMatchObject({ name: 'ci.example', team: 'default' });
  });

  it('refuses a users file together with plain tokens', () => {
    const file = usersFile(`users:\n  - { name: ana, team: payments, roles: [submitter], tokenSha256: ${hashToken('t')} }\n`);
    expect(() => accessOf({ ...none, usersFile: file, tokens: 'x' })).toThrow(expect.objectContaining({ code: ErrorCode.CONFIG_INVALID, message: expect.stringMatching(/both set/) }));
    expect(accessOf({ ...none, usersFile: file }).authenticate?.({ token: 't', certificateNames: [] })).toMatchObject({ name: 'ana', team: 'payments' });
  });

  it('tells loopback addresses from others', () => {
    for (const address of ['127.0.0.1:1', '127.3.4.5:1', 'localhost:1', '[::1]:1', 'unix:/tmp/ratchet.sock']) expect(isLoopback(address)).toBe(true);
    for (const address of ['0.0.0.0:1', '[::]:1', '10.0.0.1:1', ':1', 'example.com:1', '127.0.0.1.example.com:1']) expect(isLoopback(address)).toBe(false);
  });
});

describe('users file', () => {
  it('reads the shipped example', () => {
    const directory = loadUsersFile(path.join(__dirname, '..', '..', '..', 'config', 'users.example.yaml'));
    expect(directory.authenticate({ certificateNames: ['bob.web.example.com'] })).toMatchObject({ name: 'bob', team: 'web' });
  });

  it('names every wrong entry and what is wrong with it', () => {
    const text = ['users:', '  - { name: ana, team: "pay ments", roles: [submitter], tokenSha256: x }', '  - { name: bo, team: web, roles: [boss], certificateName: bo }', '  - { name: cy, team: web, roles: [viewer], password: hunter2 }'].join('\n');
    let message = '';
    try {
      parseUsers(text, 'users.yaml');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^users\.yaml is invalid: /);
    expect(message).toMatch(/users\.0\.team: use 1 to 64 letters/);
    expect(message).toMatch(/users\.1\.roles\.0/);
    expect(message).toMatch(/users\.2: Unrecognized key/);
    expect(message).not.toMatch(/hunter2/);
  });

  it('says which file it cannot read', () => {
    expect(() => loadUsersFile(path.join(directory, 'missing.yaml'))).toThrow(expect.objectContaining({ code: ErrorCode.CONFIG_INVALID, message: expect.stringMatching(/missing\.yaml.*RATCHET_GRPC_USERS_FILE/) }));
  });
});
