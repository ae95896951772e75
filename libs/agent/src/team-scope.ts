/** The team of tasks where nobody is told apart (no users file). */
export const DEFAULT_TEAM = 'default';

/** The memory scope every team reads (never writes: team tasks store in their own). */
const GLOBAL_SCOPE = 'global';

/**
 * What memory scopes of `team` start with: empty for the default team
 * (whose scopes are the project keys themselves, as before teams), else
 * `team:<team>/`.
 */
export function teamScopePrefix(team: string): string {
  return team === DEFAULT_TEAM ? '' : `team:${team}/`;
}

/**
 * The memory scope a task of `team` and `project` stores lessons in and
 * retrieves them from (with the global one). A team's scopes are its own,
 * so one team's lessons never reach another team's prompts.
 */
export function memoryScopeOf(team: string, project: string): string {
  const prefix = teamScopePrefix(team);
  return prefix === '' ? project : `${prefix}${project}`;
}

/** Whether a lesson in `scope` is one `team` may read: its own or the global scope. */
export function teamReads(team: string, scope: string): boolean {
  const prefix = teamScopePrefix(team);
  return prefix === '' ? !scope.startsWith('team:') : scope === GLOBAL_SCOPE || scope.startsWith(prefix);
}

/** Whether `team` may change (forget, import into) a lesson in `scope`: its own scopes only; the default team owns every scope outside teams. */
export function teamOwns(team: string, scope: string): boolean {
  const prefix = teamScopePrefix(team);
  return prefix === '' ? !scope.startsWith('team:') : scope.startsWith(prefix);
}

/** A scope as the team sees it: without its team prefix. */
export function scopeForTeam(team: string, scope: string): string {
  const prefix = teamScopePrefix(team);
  return prefix !== '' && scope.startsWith(prefix) ? scope.slice(prefix.length) : scope;
}
