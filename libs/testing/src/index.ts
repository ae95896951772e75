export { freePort } from './free-port';
export { startNatsServer } from './nats-server';
export type { NatsServerFixture, NatsServerOptions } from './nats-server';
export { startNodeProcess } from './node-process';
export type { NodeProcessFixture, NodeProcessOptions } from './node-process';
export { startPostgres } from './postgres';
export type { PostgresFixture, PostgresOptions } from './postgres';
export { waitFor } from './wait-for';
export type { WaitForOptions } from './wait-for';
export type { ProcessExit } from './managed-process';
export { fakeEmbedding, startFakeOpenAiServer } from './fake-openai-server';
export type {
  FakeChatCompletionBody,
  FakeCompletion,
  FakeEmbeddingBody,
  FakeEmbeddingResponse,
  FakeEmbeddings,
  FakeHttpError,
  FakeMalformed,
  FakeOpenAiRequest,
  FakeOpenAiResponse,
  FakeOpenAiServer,
  FakeOpenAiServerOptions,
  FakeOpenAiUsage,
  FakeStream,
  FakeToolCall,
} from './fake-openai-server';
export { stackServices, startStack } from './stack';
export type { Stack, StackOptions, StackService } from './stack';
export { auditReply, codeReply, planReply, questionsReply, reflectionReply, reviewReply, scriptedGoals, specReply, testsReply, writeScript } from './scripted-tasks';
export type { FindingReplyParts, QuestionReplyParts, ScannerVerdictParts, ScriptedGoal, SpecReplyParts } from './scripted-tasks';
export { rejectionOf } from './rejection';
export { startOtlpReceiver } from './otlp-receiver';
export type { OtlpReceiver, OtlpReceiverOptions, OtlpValue, ReceivedSpan } from './otlp-receiver';
export { findPrometheusBinary, startPrometheus } from './prometheus';
export type { PrometheusFixture, PrometheusJob, PrometheusOptions, PrometheusSample, PrometheusTargetState } from './prometheus';
export { sdist, serveNpmRegistry, servePackageIndex, wheel, zipArchive } from './package-index';
export type { NpmPackage, PackageIndex } from './package-index';
export { booksApi } from './profile-fixtures';
export { changeReport, largeWorkspace, reportModule } from './large-workspace';
