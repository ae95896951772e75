export { healthReport, runChecks } from './health';
export type { DependencyCheck, HealthInput } from './health';
export { EXIT_CONFIG, main, packageVersion, runService } from './run-service';
export type { ProcessSpec, StartContext, StartedService } from './run-service';
export { connectWithRetry, hostService, natsConnectionOf } from './service-host';
export type { NatsConnectionSettings } from './service-host';
export type { HealthServiceDefinition, HostOptions, RunningService, ServiceSpec } from './service-host';
export { checkOpsSettings, isLoopbackHost, startOpsServer } from './ops-server';
export type { OpsServer, OpsServerOptions, OpsSettings } from './ops-server';
