export { freePort } from './free-port';
export { startNatsServer } from './nats-server';
export type { NatsServerFixture, NatsServerOptions } from './nats-server';
export { startPostgres } from './postgres';
export type { PostgresFixture, PostgresOptions } from './postgres';
export { waitFor } from './wait-for';
export type { WaitForOptions } from './wait-for';
