import { describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from '@ratchet/errors';
import { sqlError, SqlFailure } from '../src/sql-error';

/** An error shaped like pg's and PGlite's DatabaseError. */
const postgresError = (code: string, message: string) => Object.assign(new Error(message), { code });
const statement = "INSERT INTO ratchet_orchestrator.tasks (id, goal, secret_column) VALUES ($1, $2, 'literal')";

describe('sqlError', () => {
  it.each([
    ['22021', 'invalid byte sequence for encoding "UTF8": 0x00', ErrorCode.INVALID_ARGUMENT, /NUL character/],
    ['22P05', 'unsupported Unicode escape sequence', ErrorCode.INVALID_ARGUMENT, /NUL character/],
    ['22001', 'value too long for type character varying(10)', ErrorCode.INVALID_ARGUMENT, /longer than the database stores; send a shorter one/],
    ['22003', 'bigint out of range', ErrorCode.INVALID_ARGUMENT, /out of the range/],
    ['22P02', 'invalid input syntax for type integer: "abc"', ErrorCode.INVALID_ARGUMENT, /cannot be stored/],
    ['23505', 'duplicate key value violates unique constraint "tasks_request_id"', ErrorCode.ALREADY_EXISTS, /already exists$/],
    ['23503', 'insert or update on table "events" violates foreign key constraint "events_task_id_fkey"', ErrorCode.FAILED_PRECONDITION, /^the change conflicts with other stored records/],
    ['08006', 'connection failure', ErrorCode.UNAVAILABLE, /connection was lost/],
    ['57P01', 'terminating connection due to administrator command', ErrorCode.UNAVAILABLE, /connection was lost/],
    ['53300', 'sorry, too many clients already', ErrorCode.UNAVAILABLE, /no free connection/],
    ['42601', 'syntax error at or near "SELEC"', ErrorCode.INTERNAL, /^database error; the server log has the details$/],
    ['42P01', 'relation "ratchet_orchestrator.tasks" does not exist', ErrorCode.INTERNAL, /database error/],
  ])('maps SQLSTATE %s to a code with a plain message', (state, raw, code, message) => {
    const cause = postgresError(state, raw);
    const error = sqlError(cause, statement);
    expect(error).toMatchObject({ code, message: expect.stringMatching(message) });
    expect(error.isRetryable).toBe(code === ErrorCode.UNAVAILABLE);
    // Neither the statement nor Postgres' own text nor the SQLSTATE reaches the message...
    expect(error.message).not.toContain(raw);
    expect(error.message).not.toMatch(/SQLSTATE|\d{5}/);
    expect(error.message).not.toMatch(/INSERT|ratchet_orchestrator|secret_column|literal|\$1/);
    // ...but both stay in the cause, for the log.
    expect(error.cause).toBeInstanceOf(SqlFailure);
    const failure = error.cause as SqlFailure;
    expect(failure.sqlState).toBe(state);
    expect(failure.message).toBe(`${raw} (SQLSTATE ${state}) in: INSERT INTO ratchet_orchestrator.tasks (id, goal, secret_column)...`);
    expect(failure.cause).toBe(cause);
  });

  it.each([
    ['Connection terminated unexpectedly', undefined],
    ['connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'],
    ['write EPIPE', 'EPIPE'],
    ['Client has encountered a connection error and is not queryable', undefined],
  ])('takes "%s" for a lost connection: UNAVAILABLE, retryable', (raw, nodeCode) => {
    const error = sqlError(nodeCode === undefined ? new Error(raw) : Object.assign(new Error(raw), { code: nodeCode }), statement);
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true, message: 'the database connection was lost; retry shortly' });
  });

  it('takes an exhausted pool for UNAVAILABLE, retryable', () => {
    const error = sqlError(new Error('timeout exceeded when trying to connect'), 'BEGIN');
    expect(error).toMatchObject({ code: ErrorCode.UNAVAILABLE, isRetryable: true, message: 'the database has no free connection right now; retry shortly' });
  });

  it('does not take a Node error code for a SQLSTATE', () => {
    expect(sqlError(Object.assign(new Error('boom'), { code: 'EACCES' }), statement).message).toBe('database error; the server log has the details');
  });

  it('passes an AppError through unchanged', () => {
    const original = new AppError(ErrorCode.ABORTED, 'version conflict');
    expect(sqlError(original, statement)).toBe(original);
  });
});
