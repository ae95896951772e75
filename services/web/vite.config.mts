// Builds the dashboard's single-page app (app/) into dist/app, which the
// gateway serves. `npx vite --config services/web/vite.config.mts` serves it
// with live reload, proxying /api to a gateway on 127.0.0.1:8080.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: path.join(here, 'app'),
  // Paths from the site root: the app is served at /, deep links (/tasks/ID) included.
  base: '/',
  plugins: [react()],
  build: {
    outDir: path.join(here, 'dist', 'app'),
    emptyOutDir: true,
    // The sources are not shipped: the image carries no .map files.
    sourcemap: false,
    target: 'es2022',
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8080' },
  },
});
