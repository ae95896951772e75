#!/usr/bin/env -S node --liftoff-only
// The `ratchet` command. Built code lives in dist/; run `npm run build` after changing src/.
'use strict';
// Spans leave this process only when an OTEL_* variable asks for it (e.g.
// OTEL_EXPORTER_OTLP_ENDPOINT); only then is the SDK loaded, as the services
// preload it, since loading it costs a third of a second of every command.
const { resolveTelemetrySettings } = require('@ratchet/telemetry');
if (resolveTelemetrySettings(process.env).traces !== 'none') {
  process.env.RATCHET_SERVICE_NAME ||= 'cli';
  require('@ratchet/telemetry/register');
}
require('../dist/main.js');
