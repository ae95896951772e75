// Memory's configuration sections (embedder, learning), without the service:
// what a client (the CLI) needs to read its config. A command talking to a
// server loads this entry point (`@ratchet/memory/settings`), not memory's
// storage and search.
export { embedderConfigSection } from './embedder-config';
export { learningConfigSection } from './learning-config';
