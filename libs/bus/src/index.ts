export { AsyncQueue } from './async-queue';
export type { BusLogger } from './logger';
export type { MessageCodec, MethodDefinition, RequestOf, ResponseOf, ServiceDefinition, UnaryMethodName } from './definitions';
export { errorFromHeaders, errorToHeaders } from './error-headers';
export { Header, instanceToken, isSubjectToken, rpcSubject, Subjects } from './headers';
export { InProcessBroker } from './in-process/in-process-broker';
export { InProcessTransport } from './in-process/in-process-transport';
export { consumeJobs, enqueueJob } from './jobs';
export type { ConsumeOptions, Job, JobConsumer } from './jobs';
export { NatsTransport } from './nats/nats-transport';
export { createQueueCaller, DroppedResult, REPLY_TO_HEADER, serveFromQueue } from './queued-call';
export type { QueueCaller, QueuedCallOptions, QueuedJobContext } from './queued-call';
export type { NatsCredentials, NatsTls, NatsTransportOptions } from './nats/nats-transport';
export { createClient } from './rpc-client';
export type { CallOptions, ClientOptions, ServiceClient } from './rpc-client';
export { serveService } from './rpc-server';
export type { CallContext, ServeOptions, ServiceImplementation, ServiceServer } from './rpc-server';
export { TransportKind } from './transport';
export type {
  DeadLetter,
  Delivery,
  EnqueueOptions,
  Envelope,
  EventReader,
  Headers,
  IncomingRequest,
  Puller,
  StoredEvent,
  SubscribeOptions,
  Subscription,
  Transport,
  TransportRequestOptions,
  WorkQueueOptions,
} from './transport';
export { busRoles, inboxPrefixOf, natsAuthorizationConfig, natsPasswordVariable, natsPermissions } from './nats/permissions';
export type { BusRole, BusRoleName, NatsPermissions, NatsUser } from './nats/permissions';
