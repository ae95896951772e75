export { envVariableFor, loadConfig } from './load-config';
export type { DeepReadonly, LoadConfigOptions } from './load-config';
export { baseConfigSchema } from './schema';
export type { BaseConfig } from './schema';
