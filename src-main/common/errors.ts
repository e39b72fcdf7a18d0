// Named errors shared by every layer. Each carries a stable `code` that the transports map to a status
// (HTTP) or an exit code (CLI), and, where it applies, the field, path or verb it is about.

export type ErrorCode =
  | 'bad_input'
  | 'not_found'
  | 'not_available'
  | 'conflict'
  | 'unauthorized'
  | 'forbidden'
  | 'rate_limited'
  | 'too_large'
  | 'locked'
  | 'busy'
  | 'internal';

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  field?: string;
  detail?: unknown;
}

export class ReinError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly detail: unknown;
  constructor(code: ErrorCode, message: string, opts: { field?: string; detail?: unknown; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ReinError';
    this.code = code;
    this.field = opts.field;
    this.detail = opts.detail;
  }
  toBody(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: this.message };
    if (this.field !== undefined) body.field = this.field;
    if (this.detail !== undefined) body.detail = this.detail;
    return body;
  }
}

export class BadInputError extends ReinError {
  constructor(message: string, field?: string, detail?: unknown) {
    super('bad_input', message, { field, detail });
    this.name = 'BadInputError';
  }
}

export class NotFoundError extends ReinError {
  constructor(message: string, detail?: unknown) {
    super('not_found', message, { detail });
    this.name = 'NotFoundError';
  }
}

/** A verb whose feature has not landed yet. Never answered with placeholder data. */
export class NotAvailableError extends ReinError {
  constructor(verb: string, why: string) {
    super('not_available', `${verb} is not available yet: ${why}`, { detail: { verb } });
    this.name = 'NotAvailableError';
  }
}

export class ConflictError extends ReinError {
  constructor(message: string, detail?: unknown) {
    super('conflict', message, { detail });
    this.name = 'ConflictError';
  }
}

export const HTTP_STATUS: Record<ErrorCode, number> = {
  bad_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  locked: 423,
  // Transient: the database's write lock is held by another process, and the request stored nothing; retry.
  busy: 503,
  rate_limited: 429,
  internal: 500,
  // A request the server understood and cannot carry out in the state it is in (no model set up yet, a provider this
  // build lacks): the caller's to fix, so a 4xx. It was 501, which the fuzzer counted as a server fault (issue #19).
  not_available: 409,
};

/** CLI exit codes: 0 ok, 1 internal, 2 usage/bad input, 3 not found, 4 conflict/locked/busy, 5 not available, 6 auth. */
export const EXIT_CODE: Record<ErrorCode, number> = {
  bad_input: 2,
  not_found: 3,
  conflict: 4,
  locked: 4,
  busy: 4,
  not_available: 5,
  unauthorized: 6,
  forbidden: 6,
  rate_limited: 7,
  too_large: 2,
  internal: 1,
};

export function errorFromBody(body: ErrorBody): ReinError {
  return new ReinError(body.code, body.message, { field: body.field, detail: body.detail });
}
