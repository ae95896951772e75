import type { Migration } from '@ratchet/db';

/** The memory service's metadata schema: lessons with evidence and statistics, failure and success records. Plain Postgres: vectors live in the VectorStore. */
export const memoryMigrations: readonly Migration[] = [
  {
    id: '0001_lessons',
    sql: `
      CREATE TABLE lessons (
        id text PRIMARY KEY,
        kind text NOT NULL,
        title text NOT NULL,
        body text NOT NULL,
        error_signature text NOT NULL DEFAULT '',
        tags jsonb NOT NULL DEFAULT '[]',
        language text NOT NULL,
        times_retrieved bigint NOT NULL DEFAULT 0,
        times_helped bigint NOT NULL DEFAULT 0,
        times_not_helped bigint NOT NULL DEFAULT 0,
        last_retrieved_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE INDEX lessons_signature ON lessons (error_signature, language) WHERE error_signature <> '';
      CREATE INDEX lessons_created ON lessons (created_at DESC, id);

      CREATE TABLE evidence (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        lesson_id text NOT NULL REFERENCES lessons (id) ON DELETE CASCADE,
        task_id text NOT NULL,
        iteration integer NOT NULL,
        failure_summary text NOT NULL DEFAULT '',
        fix_summary text NOT NULL DEFAULT '',
        recorded_at timestamptz NOT NULL
      );
      CREATE INDEX evidence_lesson ON evidence (lesson_id);

      CREATE TABLE failures (
        id text PRIMARY KEY,
        task_id text NOT NULL,
        iteration integer NOT NULL,
        goal text NOT NULL,
        language text NOT NULL,
        error_code text NOT NULL,
        error_message text NOT NULL,
        error_signature text NOT NULL,
        summary text NOT NULL,
        lesson_id text REFERENCES lessons (id) ON DELETE SET NULL,
        resolved_at timestamptz,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX failures_task ON failures (task_id);

      CREATE TABLE successes (
        id text PRIMARY KEY,
        task_id text NOT NULL,
        goal text NOT NULL,
        language text NOT NULL,
        fix_summary text NOT NULL,
        iterations_taken integer NOT NULL,
        lesson_id text REFERENCES lessons (id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL
      );
    `,
  },
];
