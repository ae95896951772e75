import { ErrorCode } from '@ratchet/errors';
import { z } from 'zod';

/** The names of this machine the dashboard always answers to, with any port. */
export const loopbackHostNames = ['localhost', '127.0.0.1', '[::1]'] as const;

/** The setting that adds names, as a standalone dashboard's refusals say it. */
export const allowedHostsSetting = 'web.allowedHosts in config/web.yaml (or RATCHET_WEB_ALLOWED_HOSTS, comma-separated)';

const label = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const allowedHostPattern = new RegExp(`^(?:\\[[0-9a-f:.]+\\]|${label}(?:\\.${label})*)(?::(\\d{1,5}))?$`, 'i');

/**
 * One name a browser may address the dashboard by: a host name or address
 * (IPv6 in brackets), with a port to accept that port only, e.g.
 * `ratchet.example.com` or `ratchet.internal:8443`.
 */
export const allowedHostSchema = z
  .string()
  .trim()
  .regex(allowedHostPattern, 'must be a host name, optionally with :port, e.g. ratchet.example.com (no scheme, no path, no wildcard)')
  .refine((entry) => {
    const port = allowedHostPattern.exec(entry)?.[1];
    return port === undefined || (Number(port) >= 1 && Number(port) <= 65_535);
  }, 'has a port outside 1-65535');

/** A request as the source check sees it: its method, path and the headers a browser sets itself. */
export interface RequestSource {
  readonly method: string;
  readonly url: string;
  readonly host: string | undefined;
  readonly origin: string | undefined;
  readonly secFetchSite: string | undefined;
}

/** Why a request was refused: its HTTP status (421 for a name not ours, 403 for another site's page) and its error. */
export interface SourceRefusal {
  readonly status: 421 | 403;
  readonly code: ErrorCode;
  readonly message: string;
}

export interface RequestSourcePolicy {
  /** The names accepted, as the refusals list them. */
  readonly names: readonly string[];
  /** Whether a Host header (or an Origin's host) names this dashboard. */
  allowsHost(host: string): boolean;
  /** Why a request must not be answered, or undefined when it may be. */
  refusalOf(request: RequestSource): SourceRefusal | undefined;
}

export interface RequestSourceOptions {
  /** Names beyond loopback (see `allowedHostSchema`); loopback names are always accepted. */
  readonly allowedHosts?: readonly string[];
  /** The port a Host without one means: 443 with TLS, else 80. */
  readonly defaultPort: number;
  /** The setting the refusals name for adding a name. Default `allowedHostsSetting`. */
  readonly setting?: string;
}

/** `name` and `port` of a Host header (or an entry); port undefined when not written. Lower-cased, a trailing dot dropped. */
function splitHost(host: string): { name: string; port: number | undefined } | undefined {
  const text = host.trim().toLowerCase();
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(text);
  const name = match?.[1];
  if (match === null || name === undefined) return undefined;
  return { name: name.replace(/\.$/, ''), port: match[2] === undefined ? undefined : Number(match[2]) };
}

/** `host:port` of an Origin header, or undefined when it is not an http(s) URL (`null` from a sandboxed page). */
function originHost(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.host.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Who may be answered: requests addressed to this dashboard by one of its
 * names, from its own pages. A page of another site whose name was made to
 * resolve to this machine (DNS rebinding) sends its own name as Host and is
 * refused with 421; a page of another origin that posts here (CSRF) sends
 * its Origin, or `Sec-Fetch-Site: cross-site`, and is refused with 403.
 * Requests without Origin and Sec-Fetch-Site (the CLI, curl) are judged by
 * Host alone; they carry their own token and no browser's.
 */
export function requestSourcePolicy(options: RequestSourceOptions): RequestSourcePolicy {
  const setting = options.setting ?? allowedHostsSetting;
  const entries = [...loopbackHostNames, ...(options.allowedHosts ?? [])].map((entry) => splitHost(entry)).filter((entry) => entry !== undefined);
  const names = [...new Set([...loopbackHostNames, ...(options.allowedHosts ?? []).map((entry) => entry.trim().toLowerCase())])];
  const allowsHost = (host: string) => {
    const parsed = splitHost(host);
    if (parsed === undefined) return false;
    const port = parsed.port ?? options.defaultPort;
    return entries.some((entry) => entry.name === parsed.name && (entry.port === undefined || entry.port === port));
  };
  const shown = names.join(', ');
  return {
    names,
    allowsHost,
    refusalOf(request) {
      const host = request.host ?? '';
      if (!allowsHost(host)) {
        return {
          status: 421,
          code: ErrorCode.PERMISSION_DENIED,
          message: `this dashboard answers to ${shown} only, not to the name ${JSON.stringify(host)}: if people open it by that name, add the name to ${setting}`,
        };
      }
      const state = request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS';
      if (request.origin !== undefined) {
        const fromHost = originHost(request.origin);
        // A change must come from a page of this very address; a read only from one of its names (a cross-origin read gets no CORS grant anyway).
        if (fromHost === undefined || !allowsHost(fromHost) || (state && fromHost !== host.trim().toLowerCase())) {
          return { status: 403, code: ErrorCode.PERMISSION_DENIED, message: `requests from pages of ${request.origin} are refused: use the dashboard itself (it answers to ${shown}; to add a name, set ${setting})` };
        }
      }
      // Browsers say where a request comes from; the API is for this dashboard's own pages, while a link from elsewhere may still open a page.
      const site = request.secFetchSite?.toLowerCase();
      if (site !== undefined && site !== 'same-origin' && site !== 'none' && (state || request.url.startsWith('/api/') || request.url === '/api')) {
        return { status: 403, code: ErrorCode.PERMISSION_DENIED, message: `a ${site} request to the dashboard's API is refused: use the dashboard itself` };
      }
      return undefined;
    },
  };
}
