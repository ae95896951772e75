// Encrypts card tokens for a legacy payment gateway.
import crypto from 'node:crypto';

export function encryptToken(key: Buffer, token: string): string {
  const iv = crypto.randomBytes(8);
  const cipher = crypto.createCipheriv('des-ede3-cbc', key, iv);
  return iv.toString('hex') + cipher.update(token, 'utf8', 'hex') + cipher.final('hex');
}
