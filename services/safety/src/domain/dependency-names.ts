/**
 * The package ecosystems the dependency policy knows: `python` is PyPI (pip),
 * `npm` serves JavaScript and TypeScript. They are also the top-level keys of
 * config/dependencies.yaml.
 */
export const Ecosystem = { PYTHON: 'python', NPM: 'npm' } as const;
export type Ecosystem = (typeof Ecosystem)[keyof typeof Ecosystem];

/** Longest package name accepted, characters (npm's limit; PyPI has none, so it applies there too). */
export const maxPackageNameLength = 214;

/** A package name as requested, split into what identifies the package and what does not. */
export interface PackageName {
  /** The name without extras, as written (trimmed): `Flask`. */
  readonly name: string;
  /** The name packages are compared by (see `normalizePackageName`): `flask`. */
  readonly normalized: string;
  /** Python extras as written, `[async]`; '' when none (always for npm). */
  readonly extras: string;
}

/** A name that is no package name, and why. */
export interface NameProblem {
  readonly problem: string;
}

const pythonName = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const pythonExtras = /^\[\s*[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\s*,\s*[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)*\s*\]$/;
// npm's rules for names (validate-npm-package-name): URL-safe characters, no leading dot or underscore,
// an optional @scope/. Capitals are legacy (JSONStream) and compared lowercase.
const npmName = /^(?:@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/i;
const npmReservedNames: ReadonlySet<string> = new Set(['node_modules', 'favicon.ico']);

/**
 * The name packages are compared by: for Python, PEP 503 (lowercase, every
 * run of `-`, `_` and `.` is one `-`, so `Flask_SQLAlchemy` is
 * `flask-sqlalchemy`); for npm, the name lowercased.
 */
export function normalizePackageName(ecosystem: Ecosystem, name: string): string {
  const lower = name.trim().toLowerCase();
  return ecosystem === Ecosystem.PYTHON ? lower.replace(/[-_.]+/g, '-') : lower;
}

/**
 * Parses a requested package name: a PEP 508 project name with optional
 * extras (`requests[socks]`) for Python, an npm name with optional scope
 * (`@types/node`) for npm. A name with a version in it (`flask>=2`,
 * `zod@3`) is a problem that says to move the version to version_spec.
 */
export function parsePackageName(ecosystem: Ecosystem, raw: string): PackageName | NameProblem {
  const trimmed = raw.trim();
  if (ecosystem === Ecosystem.PYTHON) {
    const bracket = trimmed.indexOf('[');
    const name = bracket < 0 ? trimmed : trimmed.slice(0, bracket).trimEnd();
    const extras = bracket < 0 ? '' : trimmed.slice(bracket);
    if (pythonName.test(name) && (extras === '' || pythonExtras.test(extras))) return { name, normalized: normalizePackageName(ecosystem, name), extras };
    if (/[<>=!~;@ ]/.test(trimmed)) return { problem: `"${trimmed}" is not a PyPI project name; put the version in version_spec (name "flask", version_spec ">=2,<4")` };
    return { problem: `"${trimmed}" is not a PyPI project name (letters, digits, and . _ - between them; extras in brackets, e.g. requests[socks])` };
  }
  if (npmName.test(trimmed) && !npmReservedNames.has(trimmed.toLowerCase())) return { name: trimmed, normalized: normalizePackageName(ecosystem, trimmed), extras: '' };
  if (/^(@[^@/]+\/)?[^@]+@/.test(trimmed)) return { problem: `"${trimmed}" is not an npm package name; put the version in version_spec (name "zod", version_spec "^3")` };
  return { problem: `"${trimmed}" is not an npm package name (lowercase letters, digits, - . _ ~, not starting with . or _; optionally @scope/name)` };
}

/** Whether `parsePackageName` gave a problem. */
export function isNameProblem(parsed: PackageName | NameProblem): parsed is NameProblem {
  return 'problem' in parsed;
}

/**
 * The edit distance of two names with adjacent transpositions counting as
 * one edit (optimal string alignment): `flaks` is 1 from `flask`. Stops
 * early and answers `limit + 1` once the distance is known to exceed `limit`.
 */
export function editDistance(left: string, right: string, limit = Number.POSITIVE_INFINITY): number {
  if (Math.abs(left.length - right.length) > limit) return limit + 1;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: right.length + 1 }, (_, index) => index);
  for (let i = 1; i <= left.length; i++) {
    const current = [i];
    let rowMinimum = i;
    for (let j = 1; j <= right.length; j++) {
      const cost = left[i - 1] === right[j - 1] ? 0 : 1;
      let distance = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && left[i - 1] === right[j - 2] && left[i - 2] === right[j - 1]) distance = Math.min(distance, (beforePrevious[j - 2] ?? 0) + 1);
      current.push(distance);
      rowMinimum = Math.min(rowMinimum, distance);
    }
    if (rowMinimum > limit) return limit + 1;
    beforePrevious = previous;
    previous = current;
  }
  return previous[right.length] ?? 0;
}

/**
 * How far a name of this length may be from a known one and still look like
 * a typo of it: short names are too close to each other to tell (`toml` and
 * `tomli` are both real), so below 5 characters nothing counts; up to 8
 * characters one edit; longer names two.
 */
export function typosquatDistance(length: number): number {
  if (length < 5) return 0;
  return length <= 8 ? 1 : 2;
}

/**
 * The known package `normalized` looks like a misspelling of, or undefined:
 * the first of `known` (normalised names) within `typosquatDistance` edits
 * of it and not equal to it. A name that is itself known is never a typosquat.
 */
export function typosquatTarget(normalized: string, known: readonly string[]): string | undefined {
  const limit = typosquatDistance(normalized.length);
  if (limit === 0 || known.includes(normalized)) return undefined;
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(normalized, candidate, limit);
    if (distance >= 1 && distance <= limit && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}
