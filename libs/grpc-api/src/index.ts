export { createGrpcClient, grpcHealth } from './client';
export type { GrpcCallOptions, GrpcClient, GrpcClientOptions } from './client';
export { ErrorMetadata, errorOf, grpcServiceOf, statusOf } from './definition';
export type { GrpcServiceDefinition } from './definition';
export { GrpcServer } from './server';
export type { GrpcCallContext, GrpcImplementation, GrpcServerOptions, GrpcTlsFiles } from './server';
