export { consoleOutput, runGoal, showHistory, showTask } from './commands';
export type { Output, RunOptions, RunResult } from './commands';
export { configDirectory, dataDirectory, loadCliConfig } from './cli-config';
export type { CliConfig } from './cli-config';
export { runDemo } from './demo';
export { startEmbedded } from './embedded';
export type { EmbeddedOptions, EmbeddedRatchet } from './embedded';
