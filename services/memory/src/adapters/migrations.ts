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
  {
    // Scopes keep projects apart; standing and outcomes make a lesson earn its place; the search column serves the keyword half of hybrid ranking.
    id: '0002_scope_standing_outcomes',
    sql: `
      ALTER TABLE lessons
        ADD COLUMN scope text NOT NULL DEFAULT 'global',
        ADD COLUMN status text NOT NULL DEFAULT 'candidate',
        ADD COLUMN helpfulness double precision NOT NULL DEFAULT 0.5,
        ADD COLUMN standing jsonb NOT NULL DEFAULT '[]',
        ADD COLUMN origin_task_id text NOT NULL DEFAULT '',
        ADD COLUMN embedder text NOT NULL DEFAULT '',
        ADD COLUMN last_helped_at timestamptz,
        ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || body || ' ' || translate(error_signature, ':_.', '   '))) STORED;
      UPDATE lessons SET status = 'promoted' WHERE times_helped > 0;
      UPDATE lessons l SET origin_task_id = coalesce((SELECT e.task_id FROM evidence e WHERE e.lesson_id = l.id ORDER BY e.id LIMIT 1), '');
      -- Vectors stored before embedders had ids came from the hashing embedder.
      UPDATE lessons SET embedder = 'hashing-v1-512';
      CREATE INDEX lessons_search ON lessons USING gin (search);
      CREATE INDEX lessons_scope ON lessons (scope, kind, created_at DESC);
      CREATE INDEX lessons_embedder ON lessons (embedder);

      CREATE TABLE outcomes (
        task_id text PRIMARY KEY,
        scope text NOT NULL,
        language text NOT NULL,
        iterations integer NOT NULL,
        succeeded boolean NOT NULL,
        applied jsonb NOT NULL DEFAULT '[]',
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE INDEX outcomes_comparable ON outcomes (language, scope, created_at);
    `,
  },
  {
    // Keyword relevance weighs a shared word by how rare it is (inverse document frequency), which needs how many lessons
    // hold each word: kept up to date by triggers, so a search reads a few rows instead of counting. Tags are words the
    // reflector chose to describe its lesson, so they are searched too. Inserts and deletes count per statement (a bulk
    // import is one upsert); words are locked in order, so two concurrent writers cannot deadlock.
    id: '0003_keyword_terms',
    sql: `
      ALTER TABLE lessons DROP COLUMN search;
      ALTER TABLE lessons ADD COLUMN search tsvector GENERATED ALWAYS AS (
        to_tsvector('english', title || ' ' || body || ' ' || translate(error_signature, ':_.', '   ') || ' ' || translate(tags::text, '[]",', '    '))) STORED;
      CREATE INDEX lessons_search ON lessons USING gin (search);

      CREATE TABLE terms (lexeme text PRIMARY KEY, lessons integer NOT NULL);
      CREATE TABLE term_totals (id boolean PRIMARY KEY DEFAULT true CHECK (id), lessons integer NOT NULL);
      INSERT INTO terms SELECT lexeme, count(*) FROM lessons, unnest(tsvector_to_array(search)) lexeme GROUP BY lexeme;
      INSERT INTO term_totals SELECT true, count(*) FROM lessons;

      CREATE FUNCTION count_terms(lexemes text[], delta integer) RETURNS void LANGUAGE sql AS $$
        INSERT INTO memory.terms (lexeme, lessons) SELECT lexeme, delta * count(*) FROM unnest(lexemes) lexeme GROUP BY lexeme ORDER BY lexeme
        ON CONFLICT (lexeme) DO UPDATE SET lessons = memory.terms.lessons + EXCLUDED.lessons;
      $$;
      CREATE FUNCTION terms_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        PERFORM memory.count_terms(array(SELECT lexeme FROM new_rows, unnest(tsvector_to_array(search)) lexeme), 1);
        UPDATE memory.term_totals SET lessons = lessons + (SELECT count(*) FROM new_rows);
        RETURN NULL;
      END $$;
      CREATE FUNCTION terms_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        PERFORM memory.count_terms(array(SELECT lexeme FROM old_rows, unnest(tsvector_to_array(search)) lexeme), -1);
        UPDATE memory.term_totals SET lessons = lessons - (SELECT count(*) FROM old_rows);
        RETURN NULL;
      END $$;
      CREATE FUNCTION terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        PERFORM memory.count_terms(tsvector_to_array(OLD.search), -1);
        PERFORM memory.count_terms(tsvector_to_array(NEW.search), 1);
        RETURN NULL;
      END $$;
      CREATE TRIGGER lessons_terms_inserted AFTER INSERT ON lessons REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION terms_inserted();
      CREATE TRIGGER lessons_terms_deleted AFTER DELETE ON lessons REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION terms_deleted();
      -- Row level, so it can name its columns: counting and the retrieval statistics update lessons far more often than their text changes.
      CREATE TRIGGER lessons_terms_updated AFTER UPDATE OF title, body, error_signature, tags ON lessons
        FOR EACH ROW WHEN (OLD.search IS DISTINCT FROM NEW.search) EXECUTE FUNCTION terms_updated();
    `,
  },
  {
    // A record call carries a key (the orchestrator's "<task>:<iteration>:<phase>"): a phase run again after its
    // result was lost must not count a failure, a success or a lesson's outcome twice. What the first call answered
    // is kept with the key, so the second answers the same.
    id: '0004_idempotent_records',
    sql: `
      ALTER TABLE failures ADD COLUMN idempotency_key text, ADD COLUMN lesson_created boolean NOT NULL DEFAULT false;
      CREATE UNIQUE INDEX failures_idempotency_key ON failures (idempotency_key) WHERE idempotency_key IS NOT NULL;
      ALTER TABLE successes ADD COLUMN idempotency_key text, ADD COLUMN updated_lesson_ids jsonb NOT NULL DEFAULT '[]';
      CREATE UNIQUE INDEX successes_idempotency_key ON successes (idempotency_key) WHERE idempotency_key IS NOT NULL;
    `,
  },
  {
    // The keys of retrievals already counted (RetrieveLessons' idempotency_key): a repeat counts nothing.
    // A repeat comes within minutes of the first call, so a key is kept a day (retrieved() prunes them).
    id: '0005_idempotent_retrievals',
    sql: `
      CREATE TABLE retrievals (idempotency_key text PRIMARY KEY, created_at timestamptz NOT NULL);
      CREATE INDEX retrievals_created_at ON retrievals (created_at);
    `,
  },
];
