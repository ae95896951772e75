import semver from 'semver';
import { Ecosystem } from './dependency-names';

/** Longest version specifier accepted, characters. */
export const maxVersionSpecLength = 256;

// PEP 440: [N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local], with the spellings the spec normalises (alpha, pre, -1, ...).
const pep440Version =
  /^v?(?:\d+!)?\d+(?:\.\d+)*(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?(?:-\d+|[-_.]?(?:post|rev|r)[-_.]?\d*)?(?:[-_.]?dev[-_.]?\d*)?(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?$/i;
const pep440Clause = /^(~=|===|==|!=|<=|>=|<|>)(.+)$/;

/** npm specifiers that mean "whatever is newest", the same as none. */
const npmAnyVersion: ReadonlySet<string> = new Set(['', '*', 'x', 'X', 'latest']);

/**
 * A version specifier in a form that compares: Python's without blanks
 * (`>= 2, <4` -> `>=2,<4`), npm's trimmed, '' for "any" (npm `*`, `x`,
 * `latest`).
 */
export function normalizeVersionSpec(ecosystem: Ecosystem, spec: string): string {
  if (ecosystem === Ecosystem.PYTHON) return spec.replace(/\s+/g, '');
  const trimmed = spec.trim();
  return npmAnyVersion.has(trimmed) ? '' : trimmed;
}

/**
 * What is wrong with a version specifier (normalised with
 * `normalizeVersionSpec`), or undefined when it is fine: Python takes PEP 440
 * specifiers joined by commas (`>=2,<4`, `==1.4.*`, `~=2.2`); npm takes
 * semver ranges (`^4`, `>=1.2 <2`, `1.x || 2.x`). Empty means any version.
 * URLs, git and file specifiers, tags and aliases are refused: the sandbox
 * installs from the registry only.
 */
export function versionSpecProblem(ecosystem: Ecosystem, spec: string): string | undefined {
  if (spec === '') return undefined;
  if (ecosystem === Ecosystem.PYTHON) {
    for (const clause of spec.split(',')) {
      const problem = pep440ClauseProblem(clause);
      if (problem !== undefined) return `"${spec}" is not a PEP 440 version specifier: ${problem} (write e.g. ">=2,<4", "==2.0.1" or "~=2.2")`;
    }
    return undefined;
  }
  if (/^(?:[a-z+]+:|\.{0,2}\/|~\/|[\w.-]+\/[\w.-]+(?:#.*)?$)/i.test(spec)) {
    return `"${spec}" is not a version range; only registry versions can be installed (write e.g. "^4" or ">=1.2 <2")`;
  }
  if (semver.validRange(spec) === null) return `"${spec}" is not a semver range (write e.g. "^4", "~1.2.3" or ">=1.2 <2")`;
  return undefined;
}

function pep440ClauseProblem(clause: string): string | undefined {
  const match = pep440Clause.exec(clause);
  if (match === null) return clause === '' ? 'an empty clause between commas' : `"${clause}" has no operator (==, !=, >=, <=, >, <, ~= or ===)`;
  const [, operator = '', version = ''] = match;
  if (operator === '===') return /^[^\s,;]+$/.test(version) ? undefined : `"${clause}" has no version`;
  const wildcard = version.endsWith('.*');
  const plain = wildcard ? version.slice(0, -2) : version;
  if (!pep440Version.test(plain)) return `"${version}" in "${clause}" is not a PEP 440 version`;
  if (wildcard && operator !== '==' && operator !== '!=') return `"${clause}": only == and != take a .* suffix`;
  if (wildcard && plain.includes('+')) return `"${clause}": a local version (+...) cannot end in .*`;
  if (plain.includes('+') && operator !== '==' && operator !== '!=') return `"${clause}": only == and != take a local version (+...)`;
  if (operator === '~=' && !/^v?(?:\d+!)?\d+\.\d+/.test(plain)) return `"${clause}": ~= needs at least two release numbers, e.g. ~=2.2`;
  return undefined;
}

/** Both specifiers together, or why they cannot be. */
export type CombinedSpec = { readonly ok: true; readonly spec: string } | { readonly ok: false; readonly problem: string };

/**
 * The specifier to install when a request asks for `requested` and the
 * allowlist allows `allowed` (both valid and normalised; '' is any).
 * Python: the clauses of both, comma-joined, duplicates dropped (pip takes
 * their intersection; whether it is empty is left to pip). npm: `requested`
 * when it is a subset of `allowed`; otherwise, when they intersect, both
 * joined with a space (AND; with `||` on either side, every pair of
 * alternatives that intersects); otherwise a problem.
 */
export function combineVersionSpecs(ecosystem: Ecosystem, requested: string, allowed: string): CombinedSpec {
  if (requested === '' || allowed === '') return { ok: true, spec: requested || allowed };
  if (ecosystem === Ecosystem.PYTHON) return { ok: true, spec: [...new Set([...requested.split(','), ...allowed.split(',')])].join(',') };
  if (semver.subset(requested, allowed)) return { ok: true, spec: requested };
  if (!semver.intersects(requested, allowed)) return { ok: false, problem: `${requested} does not overlap the allowed range ${allowed}` };
  return { ok: true, spec: andRanges(requested, allowed) };
}

/** `left AND right` as one range: a space joins comparators, `||` binds looser, so alternatives are paired up. */
function andRanges(left: string, right: string): string {
  // Hyphen ranges ("1 - 2") do not survive being joined with more comparators; their expansion does.
  const alternatives = (range: string) => range.split('||').map((part) => part.trim() || '*').map((part) => (/ - /.test(part) ? new semver.Range(part).range || '*' : part));
  return alternatives(left)
    .flatMap((leftPart) => alternatives(right).filter((rightPart) => semver.intersects(leftPart, rightPart)).map((rightPart) => `${leftPart} ${rightPart}`))
    .join(' || ');
}
