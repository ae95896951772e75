import { execFile } from 'node:child_process';
import path from 'node:path';

const allowed = /[^A-Za-z0-9._/:@-]+/g;

/**
 * A project key from a git remote URL: host and path without scheme,
 * credentials or `.git` (`https://user:token@github.com/team/app.git` and
 * `git@github.com:team/app.git` both give `github.com/team/app`), so clones
 * of one repository share their lessons and no token is ever kept.
 * Undefined when nothing usable is left.
 */
export function projectKeyFromRemote(url: string): string | undefined {
  let rest = url.trim();
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(rest);
  if (scheme !== null) rest = rest.slice(scheme[0].length);
  else if (/^[^/@]+@[^:/]+:/.test(rest)) rest = rest.replace(/^[^@]+@([^:]+):/, '$1/');
  rest = rest.replace(/^[^@/]*@/, '').replace(/\.git\/?$/, '').replace(/\/+$/, '');
  const key = rest.replace(allowed, '-').replace(/^[-/]+|[-/]+$/g, '').slice(0, 200);
  return key === '' ? undefined : key;
}

/** A project key from a directory's name: `dir:<name>`. */
export function projectKeyFromDirectory(dir: string): string {
  const name = path.basename(path.resolve(dir)).replace(allowed, '-').slice(0, 190) || 'root';
  return `dir:${name}`;
}

/**
 * The project key of a workspace: its git `origin` remote when it has one,
 * else its directory's name. Never throws: a missing git or remote falls
 * back to the name.
 */
export async function workspaceProjectKey(dir: string): Promise<string> {
  const remote = await new Promise<string>((resolve) => {
    execFile('git', ['-C', dir, 'config', '--get', 'remote.origin.url'], { encoding: 'utf8', timeout: 10_000, windowsHide: true }, (error, stdout) => resolve(error === null ? stdout : ''));
  });
  return (remote.trim() === '' ? undefined : projectKeyFromRemote(remote)) ?? projectKeyFromDirectory(dir);
}
