import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { SeenStoreError, type ErrorCode } from '../errors.js';

/** A call's failure as the client sees it: a gRPC status code and one clear line. */
export class RpcError extends Error {
  readonly code: GrpcStatus;

  constructor(code: GrpcStatus, message: string) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
  }
}

export function invalidArgument(message: string): RpcError {
  return new RpcError(GrpcStatus.INVALID_ARGUMENT, message);
}

/** How each seenstore error code reads to a gRPC client (docs/frontier.md "URLFrontier"). */
const STATUS_OF_CODE: Partial<Record<ErrorCode, GrpcStatus>> = {
  USAGE: GrpcStatus.INVALID_ARGUMENT,
  INVALID_URL: GrpcStatus.INVALID_ARGUMENT,
  NOT_FOUND: GrpcStatus.NOT_FOUND,
  UNSUPPORTED: GrpcStatus.UNIMPLEMENTED,
  CAPACITY_EXCEEDED: GrpcStatus.RESOURCE_EXHAUSTED,
  STORE_FULL: GrpcStatus.RESOURCE_EXHAUSTED,
  STORE_BUSY: GrpcStatus.UNAVAILABLE,
  STORE_LOCKED: GrpcStatus.UNAVAILABLE,
  STORE_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  STORE_CLOSED: GrpcStatus.UNAVAILABLE,
  EPOCH_SEALED: GrpcStatus.ABORTED,
  INTERRUPTED: GrpcStatus.ABORTED,
};

/**
 * The status a thrown error answers: an RpcError as it is, a SeenStoreError by its code (the code
 * leads the message, as in the CLI), anything else INTERNAL — a bug, whose message is logged
 * rather than sent.
 */
export function toServiceError(error: unknown): Partial<ServiceError> & { code: GrpcStatus; details: string } {
  if (error instanceof RpcError) return { code: error.code, details: error.message };
  if (error instanceof SeenStoreError)
    return { code: STATUS_OF_CODE[error.code] ?? GrpcStatus.INTERNAL, details: `${error.code}: ${error.message}` };
  return { code: GrpcStatus.INTERNAL, details: 'internal error: see the server log' };
}
