import { configSection, extendConfigSchema } from '@ratchet/config';
import { z } from 'zod';
import { allowedHostSchema } from './domain/request-source';
import { traceUrlTemplateSchema } from './domain/trace-link';

/**
 * The `web` config section (config/web.yaml, RATCHET_WEB_*): where the
 * dashboard listens, the orchestrator it serves, and the trace links.
 */
export const webConfigSection = configSection({
  /** host:port the dashboard listens on. Default loopback only; containers use 0.0.0.0:8080. */
  address: z.string().regex(/^[^\s/]+:\d{1,5}$/, 'must be host:port, e.g. 0.0.0.0:8080').default('127.0.0.1:8080'),
  /** The orchestrator's gRPC address (host:port). */
  orchestratorAddress: z.string().regex(/^[^\s/]+:\d{1,5}$/, 'must be host:port, e.g. orchestrator:50051').default('127.0.0.1:50051'),
  /** PEM CA of the orchestrator's certificate: turns TLS to it on. */
  orchestratorCaFile: z.string().min(1).optional(),
  /** TLS to the orchestrator with the system's CAs (when its certificate is from a public CA). */
  orchestratorTls: z.boolean().default(false),
  /** PEM certificate and key: the dashboard serves HTTPS. */
  certFile: z.string().min(1).optional(),
  keyFile: z.string().min(1).optional(),
  /**
   * Serve plain HTTP on an address beyond loopback: only where TLS ends in
   * front of it (an ingress, a proxy) or the port is published on loopback
   * only. Bearer tokens cross that hop in clear.
   */
  allowPlaintext: z.boolean().default(false),
  /**
   * Names beyond loopback that browsers open the dashboard by (its
   * ingress's or proxy's host name; `name:port` accepts that port only).
   * localhost, 127.0.0.1 and [::1] are always accepted, with any port; a
   * request addressed by any other name is refused (DNS rebinding).
   */
  allowedHosts: z.array(allowedHostSchema).default([]),
  /** A link per task to its trace: an http(s) URL with {taskId} and/or {traceId}. Unset: no links. */
  traceUrlTemplate: traceUrlTemplateSchema.optional(),
});

/** What the web process reads: the shared sections and `web`. */
export const webConfigSchema = extendConfigSchema({ web: webConfigSection });

export type WebConfig = z.infer<typeof webConfigSchema>;
