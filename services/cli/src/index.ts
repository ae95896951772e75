export { consoleOutput, runGoal, showHistory, showTask } from './commands';
export type { Output, RunOptions, RunResult } from './commands';
export { runDemo } from './demo';
export { startEmbedded } from './embedded';
export type { EmbeddedOptions, EmbeddedRatchet } from './embedded';
