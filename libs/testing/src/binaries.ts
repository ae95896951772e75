import { AppError, ErrorCode } from '@ratchet/errors';
import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Empty environment values count as unset. */
function fromEnvironment(name: string): string | undefined {
  const value = process.env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first executable called `name` on PATH, or undefined. */
export function findOnPath(name: string): string | undefined {
  for (const directory of (process.env['PATH'] ?? '').split(delimiter)) {
    if (directory === '') continue;
    const candidate = join(directory, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * The nats-server binary: RATCHET_NATS_SERVER_BIN, else `nats-server` on PATH.
 *
 * @throws AppError FAILED_PRECONDITION when neither yields an executable.
 */
export function findNatsServerBinary(): string {
  const configured = fromEnvironment('RATCHET_NATS_SERVER_BIN');
  if (configured !== undefined) {
    if (isExecutableFile(configured)) return configured;
    throw new AppError(
      ErrorCode.FAILED_PRECONDITION,
      `RATCHET_NATS_SERVER_BIN=${configured} is not an executable file: point it at a nats-server binary or unset it to use PATH`,
    );
  }
  const onPath = findOnPath('nats-server');
  if (onPath !== undefined) return onPath;
  throw new AppError(
    ErrorCode.FAILED_PRECONDITION,
    'nats-server not found: install it (Debian: apt-get install nats-server) or set RATCHET_NATS_SERVER_BIN',
  );
}

export interface PostgresBinaries {
  readonly initdb: string;
  readonly postgres: string;
}

function binariesIn(directory: string): PostgresBinaries | undefined {
  const initdb = join(directory, 'initdb');
  const postgres = join(directory, 'postgres');
  return isExecutableFile(initdb) && isExecutableFile(postgres) ? { initdb, postgres } : undefined;
}

/** Debian and Ubuntu install each major version side by side here. */
const debianPostgresRoot = '/usr/lib/postgresql';

function newestDebianInstall(): PostgresBinaries | undefined {
  let versions: string[];
  try {
    versions = readdirSync(debianPostgresRoot);
  } catch {
    return undefined;
  }
  const numeric = versions.filter((version) => /^\d+(\.\d+)?$/.test(version)).sort((a, b) => Number(b) - Number(a));
  for (const version of numeric) {
    const found = binariesIn(join(debianPostgresRoot, version, 'bin'));
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * initdb and postgres: from RATCHET_PG_BIN_DIR, else the newest
 * /usr/lib/postgresql/<version>/bin, else PATH.
 *
 * @throws AppError FAILED_PRECONDITION when no directory holds both.
 */
export function findPostgresBinaries(): PostgresBinaries {
  const configured = fromEnvironment('RATCHET_PG_BIN_DIR');
  if (configured !== undefined) {
    const found = binariesIn(configured);
    if (found !== undefined) return found;
    throw new AppError(
      ErrorCode.FAILED_PRECONDITION,
      `RATCHET_PG_BIN_DIR=${configured} does not contain executable initdb and postgres: point it at a PostgreSQL bin directory or unset it`,
    );
  }
  const debian = newestDebianInstall();
  if (debian !== undefined) return debian;
  const initdb = findOnPath('initdb');
  const postgres = findOnPath('postgres');
  if (initdb !== undefined && postgres !== undefined) return { initdb, postgres };
  throw new AppError(
    ErrorCode.FAILED_PRECONDITION,
    'PostgreSQL server binaries (initdb, postgres) not found: install them (Debian: apt-get install postgresql) or set RATCHET_PG_BIN_DIR to their directory',
  );
}

export interface UnprivilegedUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

function lookUpId(flag: '-u' | '-g', name: string): number | undefined {
  try {
    const output = execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const id = Number(output.trim());
    return Number.isInteger(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The user to run `binaryName` as: undefined when this process is not root;
 * the `postgres` system user when it is, because initdb and postgres refuse to
 * run as root.
 *
 * @throws AppError FAILED_PRECONDITION when running as root and there is no
 *   postgres user.
 */
export function postgresRunAsUser(): UnprivilegedUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const name = 'postgres';
  const uid = lookUpId('-u', name);
  const gid = lookUpId('-g', name);
  if (uid !== undefined && gid !== undefined && uid !== 0) return { name, uid, gid };
  throw new AppError(
    ErrorCode.FAILED_PRECONDITION,
    'initdb and postgres refuse to run as root and there is no "postgres" user to run them as: ' +
      'create one (Debian: apt-get install postgresql creates it) or run the tests as a non-root user',
  );
}

let parentDeathWrapper: string[] | null | undefined;

/**
 * A command prefix that makes the kernel SIGKILL the server when the test
 * process dies, even by SIGKILL (where no 'exit' handler runs): util-linux's
 * `setpriv --pdeathsig KILL`, which sets the flag and execs, so the pid stays
 * the server's. Empty where setpriv is missing or too old (before 2.33).
 */
export function parentDeathPrefix(): string[] {
  if (parentDeathWrapper === undefined) {
    const setpriv = process.platform === 'linux' ? findOnPath('setpriv') : undefined;
    const works = setpriv !== undefined && spawnSync(setpriv, ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore' }).status === 0;
    parentDeathWrapper = works ? [setpriv, '--pdeathsig', 'KILL', '--'] : null;
  }
  return parentDeathWrapper ?? [];
}
