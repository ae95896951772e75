import { AppError, ErrorCode } from '@ratchet/errors';
import { DEFAULT_TEAM } from '@ratchet/agent';
import { PrincipalDirectory, roleNames, type Authenticator } from '@ratchet/grpc-api';
import { loadUsersFile } from './users-file';

/** The gRPC settings that decide who may connect, and from where. */
export interface GrpcAccessSettings {
  readonly address?: string | undefined;
  readonly usersFile?: string | undefined;
  /** Comma-separated plain tokens. */
  readonly tokens: string;
  readonly clientCaFile?: string | undefined;
  readonly allowUnauthenticated: boolean;
}

/** Who the gRPC server lets in, and where it listens. */
export interface GrpcAccess {
  readonly address: string;
  readonly authenticated: boolean;
  /** Whether `address` is reachable from this host only. */
  readonly loopback: boolean;
  /** Undefined when nobody is authenticated. */
  readonly authenticate?: Authenticator;
}

const defaultPort = 50051;

/**
 * Decides authentication and the listen address: a users file, else plain
 * tokens, else client certificates alone (each certificate its own
 * principal in the default team). With none of them the server listens on
 * loopback, and an address beyond it is refused unless
 * `allowUnauthenticated` says every client there is trusted.
 *
 * @throws AppError CONFIG_INVALID for a users file together with tokens, an
 *   unreadable or invalid users file, or an unauthenticated non-loopback address.
 */
export function accessOf(settings: GrpcAccessSettings): GrpcAccess {
  const tokens = settings.tokens.split(',').map((token) => token.trim()).filter((token) => token !== '');
  if (settings.usersFile !== undefined && tokens.length > 0) {
    throw new AppError(ErrorCode.CONFIG_INVALID, 'grpc.usersFile and grpc.tokens are both set: put every token in the users file (as tokenSha256, with its team and roles) and unset RATCHET_GRPC_TOKENS');
  }
  let authenticate: Authenticator | undefined;
  if (settings.usersFile !== undefined) authenticate = loadUsersFile(settings.usersFile).authenticate;
  else if (tokens.length > 0) authenticate = PrincipalDirectory.ofTokens(tokens).authenticate;
  else if (settings.clientCaFile !== undefined) authenticate = certificateOnly;
  const authenticated = authenticate !== undefined;
  const address = settings.address ?? `${authenticated ? '0.0.0.0' : '127.0.0.1'}:${defaultPort}`;
  const loopback = isLoopback(address);
  if (!authenticated && !loopback && !settings.allowUnauthenticated) {
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      `grpc.address ${address} is reachable from other hosts, and nobody is authenticated: set grpc.usersFile (RATCHET_GRPC_USERS_FILE, see config/users.example.yaml) or RATCHET_GRPC_TOKENS; or listen on 127.0.0.1; or, on a network where every client is trusted, set RATCHET_GRPC_ALLOW_UNAUTHENTICATED=true`,
    );
  }
  return { address, authenticated, loopback, ...(authenticate === undefined ? {} : { authenticate }) };
}

/** With client certificates and no users file, a verified certificate's name is the principal: default team, every role. */
const certificateOnly: Authenticator = (credentials) => {
  const name = credentials.certificateNames[0];
  if (name === undefined) throw new AppError(ErrorCode.UNAUTHENTICATED, 'this server needs a client certificate signed by its CA');
  return { name, team: DEFAULT_TEAM, roles: new Set(roleNames), authenticated: true };
};

/** Whether a gRPC address (host:port, [v6]:port, unix:path) is reachable from this host only. */
export function isLoopback(address: string): boolean {
  if (address.startsWith('unix:')) return true;
  const host = address.startsWith('[') ? address.slice(1, address.indexOf(']')) : address.slice(0, Math.max(0, address.lastIndexOf(':')) || address.length);
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}
