import { readFileSync } from 'node:fs';
import { AppError, ErrorCode } from '@ratchet/errors';
import { PrincipalDirectory, roleNames, type PrincipalEntry, type Role } from '@ratchet/grpc-api';
import { parseDocument } from 'yaml';
import { z } from 'zod';

const name = z.string().trim().min(1).max(200);
// A team names a memory scope too, so it keeps to the characters a scope allows.
const team = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'use 1 to 64 letters, digits and . _ -');

const usersFileSchema = z.strictObject({
  users: z
    .array(
      z.strictObject({
        name,
        team,
        roles: z.array(z.enum(roleNames as [Role, ...Role[]])).min(1),
        // YAML reads unquoted digits as a number, so a hash must be quoted.
        tokenSha256: z.string({ error: 'must be the SHA-256 in quotes: "<64 hex digits>"' }).trim().optional(),
        certificateName: z.string().trim().min(1).optional(),
      }),
    )
    .min(1),
});

/**
 * Reads a users file (YAML): each user's name, team, roles and the SHA-256
 * of its token and/or its client certificate's name. Tokens themselves are
 * never in the file.
 *
 * @throws AppError CONFIG_INVALID when the file cannot be read or parsed, or
 *   names every entry that is wrong and how.
 */
export function loadUsersFile(file: string): PrincipalDirectory {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `cannot read the users file ${file} (grpc.usersFile, RATCHET_GRPC_USERS_FILE): ${(error as Error).message}`, { cause: error });
  }
  return parseUsers(text, file);
}

/** Parses the text of a users file; `source` names it in errors. */
export function parseUsers(text: string, source: string): PrincipalDirectory {
  const document = parseDocument(text, { prettyErrors: true });
  if (document.errors.length > 0) throw new AppError(ErrorCode.CONFIG_INVALID, `${source} is not valid YAML: ${document.errors[0]?.message ?? ''}`);
  const parsed = usersFileSchema.safeParse(document.toJS());
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(top level)'}: ${issue.message}`);
    throw new AppError(ErrorCode.CONFIG_INVALID, `${source} is invalid: ${problems.join('; ')}; see config/users.example.yaml`);
  }
  return new PrincipalDirectory(parsed.data.users.map((user): PrincipalEntry => ({ ...user })));
}
