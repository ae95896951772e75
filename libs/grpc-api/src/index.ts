export { createGrpcClient, grpcHealth } from './client';
export type { GrpcCallOptions, GrpcClient, GrpcClientOptions } from './client';
export { DEFAULT_GRPC_MAX_MESSAGE_BYTES, ErrorMetadata, errorOf, grpcServiceOf, statusOf } from './definition';
export type { GrpcServiceDefinition } from './definition';
export { GrpcServer } from './server';
export type { GrpcCallContext, GrpcImplementation, GrpcServerOptions, GrpcTlsFiles } from './server';
export { hashToken, LOCAL_PRINCIPAL, newToken, PrincipalDirectory, requireRole, Role, roleNames } from './principals';
export type { Authenticator, Credentials, Principal, PrincipalEntry } from './principals';
