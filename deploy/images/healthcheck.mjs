#!/usr/bin/env node
// The image's HEALTHCHECK: asks this container's service for its Health
// report through its operations port (/readyz answers with the same report
// the Health RPC gives; 200 = SERVING or DEGRADED, 503 = NOT_SERVING).
// Exit 0 healthy, 1 not. Plain Node, no dependencies: it runs every few seconds.
const port = process.env.RATCHET_TELEMETRY_METRICS_PORT?.trim() || '9464';
try {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(3000) });
  const body = (await response.text()).trim();
  if (!response.ok) {
    console.error(`not ready: ${response.status} ${body}`);
    process.exit(1);
  }
  console.log(body);
} catch (error) {
  console.error(`no answer on port ${port}: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
