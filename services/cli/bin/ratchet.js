#!/usr/bin/env -S node --liftoff-only
// The `ratchet` command. Built code lives in dist/; run `npm run build` after changing src/.
'use strict';
// Node keeps the compiled code of the modules a command loads (V8's code
// cache) and the next command starts from it: a quarter of a second less CPU
// per command. Kept in the user's own cache directory (as
// @ratchet/db's defaultCacheDirectory finds it), never in a /tmp shared with
// other users, and only a speed-up: any failure leaves Node compiling as usual.
try {
  const { homedir } = require('node:os');
  const path = require('node:path');
  const cacheRoot = process.env.RATCHET_CACHE_DIR || (process.env.XDG_CACHE_HOME ? path.join(process.env.XDG_CACHE_HOME, 'ratchet') : path.join(homedir(), '.cache', 'ratchet'));
  const directory = path.join(path.resolve(cacheRoot), 'compile-cache');
  require('node:fs').mkdirSync(directory, { recursive: true, mode: 0o700 });
  require('node:module').enableCompileCache?.(directory);
} catch {
  // No cache directory (a read-only home, say): the command runs, only slower to start.
}
// Spans leave this process only when an OTEL_* variable asks for it (e.g.
// OTEL_EXPORTER_OTLP_ENDPOINT); only then is the SDK loaded, as the services
// preload it, since loading it costs a third of a second of every command.
const { resolveTelemetrySettings } = require('@ratchet/telemetry');
if (resolveTelemetrySettings(process.env).traces !== 'none') {
  process.env.RATCHET_SERVICE_NAME ||= 'cli';
  require('@ratchet/telemetry/register');
}
require('../dist/main.js');
