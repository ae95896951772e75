#!/usr/bin/env node
// Writes deploy/nats/authorization.conf, nats-server's users and their
// permissions, from the bus roles in libs/bus (src/nats/permissions.ts), so
// the shipped config says exactly what the code allows. Each role's password
// is the environment variable RATCHET_NATS_PASSWORD_<ROLE> of nats-server.
//
//   node tools/nats-config.mjs          write the file (after `npx nx run @ratchet/bus:build`)
//
// libs/bus/test/nats-auth.spec.ts fails when the file and the roles differ.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { busRoles, natsAuthorizationConfig, natsPasswordVariable } from '@ratchet/bus';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const target = path.join(repoRoot, 'deploy', 'nats', 'authorization.conf');
const users = Object.keys(busRoles).map((role) => ({ role, user: role, password: `$${natsPasswordVariable(role)}` }));
fs.writeFileSync(target, natsAuthorizationConfig(users));
console.log(`wrote ${path.relative(repoRoot, target)}: ${users.length} users`);
