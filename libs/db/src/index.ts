export type { Database, Queryable, QueryResult } from './database';
export { migrate } from './migrate';
export type { Migration } from './migrate';
export { defaultSharedBuffersMb, openPglite } from './pglite';
export type { PgliteOptions } from './pglite';
export { clusterTemplate, defaultCacheDirectory } from './pglite-template';
export type { ClusterTemplate } from './pglite-template';
export { openPostgres, openPostgresWithRetry } from './postgres';
export type { PostgresOptions } from './postgres';
