// The orchestrator's configuration section and the rules a submission's
// labels follow, without the service: what a client (the CLI) needs to read
// its config and check a task before sending it. A command talking to a
// server loads this entry point (`@ratchet/orchestrator/settings`), not the
// orchestrator's storage, bus and loop.
export { orchestratorConfigSection } from './config';
export { checkLabels, labelLimits, labelProblem } from './domain/labels';
export { userTestsOnlyLabel } from './domain/policy';
