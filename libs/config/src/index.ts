export { envVariableFor, loadConfig } from './load-config';
export type { DeepReadonly, LoadConfigOptions } from './load-config';
export { baseConfigSchema, configSection, extendConfigSchema, telemetryConfigSchema } from './schema';
export type { BaseConfig, TelemetryConfig } from './schema';
