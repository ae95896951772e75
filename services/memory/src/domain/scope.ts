import { AppError, ErrorCode } from '@ratchet/errors';

/** The scope every project sees. */
export const GLOBAL_SCOPE = 'global';

// 200 for a project key, plus room for a team's prefix (`team:<team>/`, team names up to 64).
const scopePattern = /^[A-Za-z0-9._/:@-]{1,280}$/;

/**
 * A project key as stored: trimmed, `global` when empty.
 *
 * @throws AppError INVALID_ARGUMENT for characters outside letters, digits
 *   and `. _ / : @ -`, or more than 280 of them.
 */
export function scopeOf(project: string): string {
  const scope = project.trim();
  if (scope === '') return GLOBAL_SCOPE;
  if (!scopePattern.test(scope)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `scope ${JSON.stringify(scope.slice(0, 60))} is not a project key: use letters, digits and . _ / : @ - (at most 280)`);
  return scope;
}

/** The scopes a task of `project` searches: its own and the global one, or its own only. */
export function searchScopes(project: string, ownOnly: boolean): string[] {
  const scope = scopeOf(project);
  return ownOnly || scope === GLOBAL_SCOPE ? [scope] : [scope, GLOBAL_SCOPE];
}
