/**
 * The shape of ts-proto's `outputServices=generic-definitions` output, stated
 * structurally so the bus does not depend on any one generated file.
 */
export interface MessageCodec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(input: Uint8Array): T;
}

export interface MethodDefinition<Request = unknown, Response = unknown> {
  readonly name: string;
  readonly requestType: MessageCodec<Request>;
  readonly responseType: MessageCodec<Response>;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

export interface ServiceDefinition {
  readonly name: string;
  /** e.g. `ratchet.v1.PlannerService`; with the method name it forms the subject. */
  readonly fullName: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each method has its own types
  readonly methods: Readonly<Record<string, MethodDefinition<any, any>>>;
}

type Methods<D extends ServiceDefinition> = D['methods'];

/** Names of the methods that are plain request/response (streams are served over gRPC, not the bus). */
export type UnaryMethodName<D extends ServiceDefinition> = {
  [K in keyof Methods<D>]: Methods<D>[K]['requestStream'] extends false ? (Methods<D>[K]['responseStream'] extends false ? K : never) : never;
}[keyof Methods<D>] &
  string;

export type RequestOf<M> = M extends MethodDefinition<infer Request, unknown> ? Request : never;
export type ResponseOf<M> = M extends MethodDefinition<unknown, infer Response> ? Response : never;
