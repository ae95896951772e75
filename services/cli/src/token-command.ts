import { AppError, ErrorCode } from '@ratchet/errors';
import { newToken, roleNames, type Role } from '@ratchet/grpc-api';
import { stringify } from 'yaml';
import { consoleOutput, type Output } from './commands';

/**
 * `ratchet token`: a new random token and the users-file entry that
 * admits it. The token is printed once; the entry holds only its SHA-256.
 *
 * @throws AppError INVALID_ARGUMENT for an unknown role or a malformed team.
 */
export function printNewToken(options: { name: string; team: string; roles: string }, output: Output = consoleOutput): void {
  const roles = options.roles.split(',').map((role) => role.trim()).filter((role) => role !== '');
  const unknown = roles.filter((role) => !(roleNames as readonly string[]).includes(role));
  if (roles.length === 0 || unknown.length > 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `--roles ${unknown.length > 0 ? `has ${unknown.join(', ')}, which is not a role` : 'is empty'}; use any of ${roleNames.join(', ')}`);
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(options.team)) throw new AppError(ErrorCode.INVALID_ARGUMENT, '--team needs 1 to 64 letters, digits and . _ -');
  if (options.name.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, '--name is empty; give who the token is for');
  const { token, sha256 } = newToken();
  output.out(`token (give it to ${options.name.trim()}; it is not stored anywhere, and is shown only now):\n  ${token}\n`);
  output.out('entry for the server\'s users file (grpc.usersFile), under users:');
  output.out(stringify([{ name: options.name.trim(), team: options.team, roles: roles as Role[], tokenSha256: sha256 }], { defaultStringType: 'QUOTE_DOUBLE', defaultKeyType: 'PLAIN' }).trimEnd().replace(/^/gm, '  '));
}
