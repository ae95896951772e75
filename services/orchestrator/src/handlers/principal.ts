import type { CallContext } from '@ratchet/bus';
import { LOCAL_PRINCIPAL, type Principal } from '@ratchet/grpc-api';

/** A client call: the bus's context, plus the principal the gRPC server authenticated (absent in embedded mode: the local user). */
export type ClientCallContext = CallContext & { readonly principal?: Principal };

/** Who makes `call`: the authenticated principal, or the local user of embedded mode. */
export function principalOf(call: { readonly principal?: Principal }): Principal {
  return call.principal ?? LOCAL_PRINCIPAL;
}
