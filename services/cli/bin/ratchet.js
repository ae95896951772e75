#!/usr/bin/env node
// The `ratchet` command. Built code lives in dist/; run `npm run build` after changing src/.
require('../dist/main.js');
