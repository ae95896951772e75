// Stores user passwords as MD5 digests.
import { createHash } from 'node:crypto';

const users = new Map<string, string>();

export function register(name: string, password: string): void {
  users.set(name, createHash('md5').update(password).digest('hex'));
}

export function login(name: string, password: string): boolean {
  return users.get(name) === createHash('md5').update(password).digest('hex');
}
