import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DEFAULT_TEAM } from '@ratchet/agent';
import { AppError, ErrorCode } from '@ratchet/errors';

/** What a principal may do within its team. */
export const Role = {
  /** Read tasks, their events and lessons. */
  VIEWER: 'viewer',
  /** Submit, cancel and resume tasks; import and forget lessons. */
  SUBMITTER: 'submitter',
  /** Decide approval gates. */
  APPROVER: 'approver',
  /** Everything above, plus operations on the whole memory (re-index). */
  ADMIN: 'admin',
} as const;
export type Role = (typeof Role)[keyof typeof Role];

export const roleNames: readonly Role[] = Object.values(Role);

/** Who makes a call: a user or a program, the team it acts for, and what it may do there. */
export interface Principal {
  readonly name: string;
  readonly team: string;
  readonly roles: ReadonlySet<Role>;
  /** False only for the principal of a server that authenticates nobody. */
  readonly authenticated: boolean;
}


/** The caller when the server authenticates nobody (loopback only): every role, the default team. */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({ name: 'local', team: DEFAULT_TEAM, roles: new Set(roleNames), authenticated: false });

/** One entry of a users file: a principal and how it proves who it is. */
export interface PrincipalEntry {
  readonly name: string;
  readonly team: string;
  readonly roles: readonly Role[];
  /** SHA-256 of the bearer token, lower-case hex (`ratchet token` prints one). */
  readonly tokenSha256?: string;
  /** Subject common name (or a DNS or e-mail alternative name) of the principal's client certificate (mTLS). */
  readonly certificateName?: string;
}

/** What a call presents: its bearer token, and the names in its verified client certificate. */
export interface Credentials {
  readonly token?: string;
  readonly certificateNames: readonly string[];
}

/** Decides who a call is; throws UNAUTHENTICATED when it cannot tell. */
export type Authenticator = (credentials: Credentials) => Principal;

/** SHA-256 of a token, lower-case hex: what a users file stores instead of the token. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new random bearer token (256 bits, base64url) and its hash for the users file. */
export function newToken(): { token: string; sha256: string } {
  const token = `rtk_${randomBytes(32).toString('base64url')}`;
  return { token, sha256: hashToken(token) };
}

/**
 * Principals from a users file (and, for small setups, plain tokens): the
 * token's hash or the client certificate's name picks the principal. Token
 * hashes are compared in constant time.
 */
export class PrincipalDirectory {
  private readonly byToken: { readonly hash: Buffer; readonly principal: Principal }[] = [];
  private readonly byCertificate = new Map<string, Principal>();

  /**
   * @throws AppError CONFIG_INVALID for a duplicate name, token hash or
   *   certificate name, a hash that is not 64 hex digits, or an entry with
   *   neither a token hash nor a certificate name.
   */
  constructor(entries: readonly PrincipalEntry[]) {
    const names = new Set<string>();
    for (const entry of entries) {
      if (names.has(entry.name)) throw new AppError(ErrorCode.CONFIG_INVALID, `users: ${entry.name} is listed twice; names must be unique`);
      names.add(entry.name);
      const principal: Principal = Object.freeze({ name: entry.name, team: entry.team, roles: new Set(entry.roles), authenticated: true });
      if (entry.tokenSha256 === undefined && entry.certificateName === undefined) {
        throw new AppError(ErrorCode.CONFIG_INVALID, `users: ${entry.name} has neither tokenSha256 nor certificateName, so nobody can act as it; \`ratchet token\` prints a token and its hash`);
      }
      if (entry.tokenSha256 !== undefined) {
        if (!/^[0-9a-f]{64}$/i.test(entry.tokenSha256)) throw new AppError(ErrorCode.CONFIG_INVALID, `users: tokenSha256 of ${entry.name} is not a SHA-256 in hex (64 digits); \`ratchet token\` prints one`);
        const hash = Buffer.from(entry.tokenSha256.toLowerCase(), 'hex');
        if (this.byToken.some((known) => known.hash.equals(hash))) throw new AppError(ErrorCode.CONFIG_INVALID, `users: ${entry.name} has the same token as another user; give each its own`);
        this.byToken.push({ hash, principal });
      }
      if (entry.certificateName !== undefined) {
        if (this.byCertificate.has(entry.certificateName)) throw new AppError(ErrorCode.CONFIG_INVALID, `users: certificate name ${entry.certificateName} of ${entry.name} belongs to another user too`);
        this.byCertificate.set(entry.certificateName, principal);
      }
    }
  }

  /** Plain tokens of a small setup: each is a principal of the default team with every role. */
  static ofTokens(tokens: readonly string[]): PrincipalDirectory {
    return new PrincipalDirectory(tokens.map((token, index) => ({ name: `token-${index + 1}`, team: DEFAULT_TEAM, roles: roleNames, tokenSha256: hashToken(token) })));
  }

  get size(): number {
    return this.byToken.length + this.byCertificate.size;
  }

  /**
   * The principal of a call: its token's, else its certificate's.
   *
   * @throws AppError UNAUTHENTICATED for a missing or unknown token and no known certificate.
   */
  readonly authenticate: Authenticator = (credentials) => {
    if (credentials.token !== undefined) {
      const given = createHash('sha256').update(credentials.token, 'utf8').digest();
      let found: Principal | undefined;
      // Every entry is compared, so the time taken does not tell which one (or whether one) matched.
      for (const known of this.byToken) if (timingSafeEqual(known.hash, given)) found = known.principal;
      if (found !== undefined) return found;
      throw new AppError(ErrorCode.UNAUTHENTICATED, 'the token is not valid for this server; check --token / RATCHET_TOKEN');
    }
    for (const name of credentials.certificateNames) {
      const principal = this.byCertificate.get(name);
      if (principal !== undefined) return principal;
    }
    if (credentials.certificateNames.length > 0) {
      throw new AppError(ErrorCode.UNAUTHENTICATED, `no user of this server has the client certificate of ${credentials.certificateNames[0]}; ask an operator to add it (certificateName in the users file) or pass --token`);
    }
    throw new AppError(ErrorCode.UNAUTHENTICATED, 'this server needs a token: pass --token or set RATCHET_TOKEN');
  };
}

/**
 * Whether `principal` holds `role` (admin holds every role).
 *
 * @throws AppError PERMISSION_DENIED naming the role and what it allows.
 */
export function requireRole(principal: Principal, role: Role, action: string): void {
  // Every role reads; admin holds them all.
  if (principal.roles.has(role) || principal.roles.has(Role.ADMIN) || (role === Role.VIEWER && principal.roles.size > 0)) return;
  throw new AppError(ErrorCode.PERMISSION_DENIED, `${principal.name} may not ${action}: that needs the ${role} role in team ${principal.team}; ask an operator to add it in the users file`);
}
