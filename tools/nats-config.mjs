#!/usr/bin/env node
// Writes deploy/nats/authorization.conf, nats-server's users and their
// permissions, from the bus roles in libs/bus (src/nats/permissions.ts), so
// the shipped config says exactly what the code allows. Each role's password
// is the environment variable RATCHET_NATS_PASSWORD_<ROLE> of nats-server.
// The same text goes to k8s/overlays/dev/nats/authorization.conf: kustomize
// reads no file outside its root, so the dev overlay's nats-server config map
// needs a copy of its own.
//
//   node tools/nats-config.mjs          write both (after `npx nx run @ratchet/bus:build`)
//
// libs/bus/test/nats-auth.spec.ts fails when either file and the roles differ.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { busRoles, natsAuthorizationConfig, natsPasswordVariable } from '@ratchet/bus';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const targets = [path.join(repoRoot, 'deploy', 'nats', 'authorization.conf'), path.join(repoRoot, 'k8s', 'overlays', 'dev', 'nats', 'authorization.conf')];
const users = Object.keys(busRoles).map((role) => ({ role, user: role, password: `$${natsPasswordVariable(role)}` }));
const config = natsAuthorizationConfig(users);
for (const target of targets) {
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, config);
  console.log(`wrote ${path.relative(repoRoot, target)}: ${users.length} users`);
}
