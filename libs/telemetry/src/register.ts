// Preloaded with `node --require @ratchet/telemetry/register main.js`, so the
// SDK is in place before application code loads and creates spans.
import { NodeSDK } from '@opentelemetry/sdk-node';

const serviceName = process.env['OTEL_SERVICE_NAME'] || process.env['RATCHET_SERVICE_NAME'] || 'ratchet';
// No collector is assumed: exporting is opt-in through the standard OTEL
// variables, otherwise the SDK would retry against localhost:4318 forever.
const exporterConfigured = Boolean(process.env['OTEL_TRACES_EXPORTER'] || process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] || process.env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
if (!exporterConfigured) process.env['OTEL_TRACES_EXPORTER'] = 'none';
process.env['OTEL_METRICS_EXPORTER'] ||= 'none';
process.env['OTEL_LOGS_EXPORTER'] ||= 'none';

const sdk = new NodeSDK({ serviceName });
sdk.start();

let shuttingDown = false;
const shutdown = () => {
  if (shuttingDown) return;
  shuttingDown = true;
  sdk.shutdown().catch((error: unknown) => process.stderr.write(`telemetry: shutdown failed: ${String(error)}\n`));
};
// Flush what was recorded once the application has finished; the app's own
// SIGTERM handling is left alone (no process.exit here).
process.once('beforeExit', shutdown);
