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

/** A PEP 440 version taken apart, for ordering. */
interface Pep440Version {
  readonly epoch: number;
  /** Release numbers without trailing zeros (1.0 and 1 are equal). */
  readonly release: readonly number[];
  /** How many release numbers were written (2 for 1.0), for prefix matching. */
  readonly releaseLength: number;
  /** a = 0, b = 1, rc = 2, and its number. */
  readonly pre?: readonly [number, number];
  readonly post?: number;
  readonly dev?: number;
  /** The local label (+ubuntu1), lower case; '' for none. */
  readonly local: string;
  /** The text as written, lower case, for ===. */
  readonly text: string;
}

const pep440Parts =
  /^v?(?:(\d+)!)?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?(?:-(\d+)|[-_.]?(?:post|rev|r)[-_.]?(\d*))?(?:[-_.]?(dev)[-_.]?(\d*))?(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$/i;
const preRank: Readonly<Record<string, number>> = { a: 0, alpha: 0, b: 1, beta: 1, c: 2, rc: 2, pre: 2, preview: 2 };

function parsePep440(text: string): Pep440Version | undefined {
  const match = pep440Parts.exec(text.trim());
  if (match === null) return undefined;
  const [, epoch, release = '0', preKind, preNumber, postDash, postNumber, dev, devNumber, local] = match;
  const numbers = release.split('.').map(Number);
  const releaseLength = numbers.length;
  while (numbers.length > 1 && numbers.at(-1) === 0) numbers.pop();
  // An optional group that did not match leaves its captures undefined; one that matched without digits, ''.
  const post = postDash !== undefined ? Number(postDash) : postNumber !== undefined ? Number(postNumber || 0) : undefined;
  return {
    epoch: Number(epoch ?? 0),
    release: numbers,
    releaseLength,
    ...(preKind === undefined ? {} : { pre: [preRank[preKind.toLowerCase()] ?? 2, Number(preNumber || 0)] as const }),
    ...(post === undefined ? {} : { post }),
    ...(dev === undefined ? {} : { dev: Number(devNumber || 0) }),
    local: (local ?? '').toLowerCase(),
    text: text.trim().toLowerCase(),
  };
}

function compareNumbers(left: readonly number[], right: readonly number[]): number {
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

/** PEP 440 order of two public versions (local labels ignored). */
function comparePep440(left: Pep440Version, right: Pep440Version): number {
  // A dev release of a final version (1.0.dev1) sorts before its pre-releases; a final one after them.
  const preKey = (version: Pep440Version): readonly number[] => version.pre ?? (version.dev !== undefined && version.post === undefined ? [-1, 0] : [3, 0]);
  return (
    compareNumbers([left.epoch], [right.epoch]) ||
    compareNumbers(left.release, right.release) ||
    compareNumbers(preKey(left), preKey(right)) ||
    compareNumbers([left.post ?? -1], [right.post ?? -1]) ||
    compareNumbers([left.dev ?? Number.MAX_SAFE_INTEGER], [right.dev ?? Number.MAX_SAFE_INTEGER])
  );
}

/** Whether `version`'s release starts with `prefix` (zeros padding the shorter), in the same epoch. */
function hasReleasePrefix(version: Pep440Version, prefix: Pep440Version, length: number): boolean {
  if (version.epoch !== prefix.epoch) return false;
  return compareNumbers(Array.from({ length }, (_, index) => version.release[index] ?? 0), Array.from({ length }, (_, index) => prefix.release[index] ?? 0)) === 0;
}

function pep440ClauseHolds(version: Pep440Version, clause: string): boolean {
  const match = pep440Clause.exec(clause);
  if (match === null) return false;
  const [, operator = '', written = ''] = match;
  if (operator === '===') return version.text === written.trim().toLowerCase();
  const wildcard = written.endsWith('.*');
  const wanted = parsePep440(wildcard ? written.slice(0, -2) : written);
  if (wanted === undefined) return false;
  const releaseLength = wanted.releaseLength;
  const order = comparePep440(version, wanted);
  const sameRelease = version.epoch === wanted.epoch && compareNumbers(version.release, wanted.release) === 0;
  switch (operator) {
    case '==':
      if (wildcard) return hasReleasePrefix(version, wanted, releaseLength);
      return order === 0 && (wanted.local === '' || version.local === wanted.local);
    case '!=':
      if (wildcard) return !hasReleasePrefix(version, wanted, releaseLength);
      return !(order === 0 && (wanted.local === '' || version.local === wanted.local));
    case '>=':
      return order >= 0;
    case '<=':
      return order <= 0;
    case '>':
      // >1.7 does not take 1.7.post1 (unless it names a post-release itself).
      return order > 0 && !(wanted.post === undefined && version.post !== undefined && sameRelease && version.pre === undefined && wanted.pre === undefined);
    case '<':
      // <1.7 does not take 1.7a1 (unless it names a pre-release itself).
      return order < 0 && !(wanted.pre === undefined && wanted.dev === undefined && sameRelease && (version.pre !== undefined || version.dev !== undefined));
    case '~=': {
      // ~=2.2.1 is >=2.2.1, ==2.2.*
      const prefixLength = Math.max(1, releaseLength - 1);
      return order >= 0 && hasReleasePrefix(version, wanted, prefixLength);
    }
    default:
      return false;
  }
}

/**
 * What is wrong with `version` as one exact version (PEP 440 `2.2.2`,
 * `1.0.post1`, `2022.7.1`; semver `3.23.8`), or undefined when it is fine.
 */
export function versionProblem(ecosystem: Ecosystem, version: string): string | undefined {
  const trimmed = version.trim();
  if (trimmed === '') return 'must not be empty';
  if (ecosystem === Ecosystem.PYTHON) return parsePep440(trimmed) === undefined ? `"${trimmed}" is not a PEP 440 version (write e.g. "2.2.2" or "1.0.post1")` : undefined;
  return semver.valid(trimmed) === null ? `"${trimmed}" is not a semver version (write e.g. "3.23.8")` : undefined;
}

/**
 * Whether the exact `version` satisfies `spec` (normalised with
 * `normalizeVersionSpec`; '' is any), as the ecosystem's installer decides
 * whether an installed version will do: every comma-separated PEP 440 clause
 * holds (pre-releases count, as pip counts an installed one), or the semver
 * range includes it (pre-releases included). An invalid version or
 * specifier satisfies nothing.
 */
export function versionSatisfies(ecosystem: Ecosystem, version: string, spec: string): boolean {
  if (versionProblem(ecosystem, version) !== undefined) return false;
  if (spec === '') return true;
  if (versionSpecProblem(ecosystem, spec) !== undefined) return false;
  if (ecosystem === Ecosystem.NPM) return semver.satisfies(version.trim(), spec, { includePrerelease: true });
  const parsed = parsePep440(version);
  return parsed !== undefined && spec.split(',').every((clause) => pep440ClauseHolds(parsed, clause));
}
