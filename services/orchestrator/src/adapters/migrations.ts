import type { Migration } from '@ratchet/db';

/**
 * The orchestrator's schema. Proto-shaped values (plans, reports, files) are
 * stored as their canonical proto JSON in jsonb: readable with psql, and
 * decoded with the generated `fromJSON`. Statuses are stored by name.
 */
export const orchestratorMigrations: readonly Migration[] = [
  {
    id: '0001_tasks_iterations_events',
    sql: `
      CREATE TABLE tasks (
        id text PRIMARY KEY,
        goal text NOT NULL,
        language text NOT NULL,
        status text NOT NULL,
        status_reason text NOT NULL DEFAULT '',
        stop_reason text NOT NULL DEFAULT '',
        current_iteration integer NOT NULL DEFAULT 0,
        replan_count integer NOT NULL DEFAULT 0,
        replan_reason text NOT NULL DEFAULT '',
        budget jsonb NOT NULL,
        usage jsonb NOT NULL,
        labels jsonb NOT NULL DEFAULT '{}',
        workspace jsonb NOT NULL DEFAULT '[]',
        acceptance_tests jsonb NOT NULL DEFAULT '[]',
        generated_tests jsonb NOT NULL DEFAULT '[]',
        result_files jsonb NOT NULL DEFAULT '[]',
        plan jsonb,
        lessons jsonb NOT NULL DEFAULT '[]',
        request_id text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz
      );
      CREATE UNIQUE INDEX tasks_request_id ON tasks (request_id) WHERE request_id <> '';
      CREATE INDEX tasks_created ON tasks (created_at DESC, id DESC);
      CREATE INDEX tasks_status ON tasks (status);

      CREATE TABLE iterations (
        task_id text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        number integer NOT NULL,
        phase text NOT NULL,
        plan jsonb,
        files jsonb NOT NULL DEFAULT '[]',
        test_report jsonb,
        error jsonb,
        safety_findings jsonb NOT NULL DEFAULT '[]',
        reflection jsonb,
        hypothesis text NOT NULL DEFAULT '',
        retrieved_lesson_ids jsonb NOT NULL DEFAULT '[]',
        reflection_lessons jsonb NOT NULL DEFAULT '[]',
        failure_id text NOT NULL DEFAULT '',
        fingerprint jsonb,
        output text NOT NULL DEFAULT '',
        usage jsonb NOT NULL,
        started_at timestamptz NOT NULL,
        completed_at timestamptz,
        PRIMARY KEY (task_id, number)
      );

      CREATE TABLE events (
        task_id text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        sequence bigint NOT NULL,
        time timestamptz NOT NULL,
        iteration integer NOT NULL,
        kind text NOT NULL,
        payload jsonb NOT NULL,
        PRIMARY KEY (task_id, sequence)
      );
    `,
  },
  {
    id: '0002_event_counter',
    // The last event sequence per task, bumped by the transition's own UPDATE,
    // saves a max() query on every transition.
    sql: `
      ALTER TABLE tasks ADD COLUMN last_event_sequence bigint NOT NULL DEFAULT 0;
      UPDATE tasks SET last_event_sequence = coalesce((SELECT max(sequence) FROM events WHERE events.task_id = tasks.id), 0);
    `,
  },
  {
    id: '0003_task_leases',
    // A task is driven by the orchestrator replica that holds its lease; the
    // lease runs on the database's clock, so replicas' clocks need not agree.
    // A cancel asked of a replica that does not drive the task is left on
    // the row for the one that does.
    sql: `
      ALTER TABLE tasks ADD COLUMN owner text;
      ALTER TABLE tasks ADD COLUMN lease_expires_at timestamptz;
      ALTER TABLE tasks ADD COLUMN cancel_reason text;
      CREATE INDEX tasks_unfinished ON tasks (created_at)
        WHERE status NOT IN ('TASK_STATUS_SUCCEEDED', 'TASK_STATUS_FAILED', 'TASK_STATUS_CANCELLED');
    `,
  },
  {
    id: '0004_approval_gates',
    // Which gates a task needs a human for, and the gates themselves: a task
    // AWAITING_APPROVAL waits here, driven by nobody, until Approve decides.
    sql: `
      ALTER TABLE tasks ADD COLUMN approval_kinds jsonb NOT NULL DEFAULT '[]';
      ALTER TABLE tasks ADD COLUMN approval_timeout_ms bigint NOT NULL DEFAULT 0;
      CREATE TABLE approvals (
        gate_id text PRIMARY KEY,
        task_id text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        iteration integer NOT NULL,
        kind text NOT NULL,
        summary text NOT NULL,
        detail text NOT NULL,
        decision text NOT NULL,
        approver text NOT NULL DEFAULT '',
        comment text NOT NULL DEFAULT '',
        requested_at timestamptz NOT NULL,
        decided_at timestamptz,
        expires_at timestamptz
      );
      CREATE INDEX approvals_by_task ON approvals (task_id, requested_at);
      CREATE INDEX approvals_pending ON approvals (expires_at) WHERE decision = 'APPROVAL_DECISION_PENDING';
    `,
  },
  {
    id: '0005_resume_count',
    // Resumes are counted apart from re-plans: a resume is a person's choice, not the loop's.
    sql: `ALTER TABLE tasks ADD COLUMN resume_count integer NOT NULL DEFAULT 0;`,
  },
  {
    id: '0006_test_disputes',
    // Generated tests the coder said contradict the goal, kept with the iteration for the reflector.
    sql: `ALTER TABLE iterations ADD COLUMN test_disputes jsonb NOT NULL DEFAULT '[]';`,
  },
  {
    id: '0007_stored_lesson',
    // The lesson memory kept from a reflection, so `ratchet show` names it as stored (merged: the earlier title).
    sql: `ALTER TABLE iterations ADD COLUMN stored_lesson jsonb;`,
  },
  {
    id: '0008_tool_steps',
    // The agentic coder's tool calls, stored one by one as they happen, so a crash mid-phase keeps what was tried.
    sql: `ALTER TABLE iterations ADD COLUMN tool_steps jsonb NOT NULL DEFAULT '[]';`,
  },
  {
    id: '0009_command_decisions',
    // People's answers to command gates, for the coder when it goes on.
    sql: `ALTER TABLE tasks ADD COLUMN command_decisions jsonb NOT NULL DEFAULT '[]';`,
  },
  {
    id: '0010_test_command',
    // A workspace task's own test command, and whether its tests may be edited (set at submit, never changed).
    sql: `ALTER TABLE tasks ADD COLUMN test_command jsonb NOT NULL DEFAULT '[]';
          ALTER TABLE tasks ADD COLUMN test_edits text NOT NULL DEFAULT 'TEST_EDITS_UNSPECIFIED';`,
  },
  {
    id: '0011_project_memory',
    // The project a task's lessons belong to, and how it uses memory (set at submit, never changed).
    sql: `ALTER TABLE tasks ADD COLUMN project text NOT NULL DEFAULT '';
          ALTER TABLE tasks ADD COLUMN memory_use text NOT NULL DEFAULT 'MEMORY_USE_UNSPECIFIED';`,
  },
  {
    id: '0012_teams',
    // Every task belongs to its submitter's team; a request id is unique within a team only, so one team cannot learn another's ids by colliding with them.
    sql: `ALTER TABLE tasks ADD COLUMN team text NOT NULL DEFAULT 'default';
          ALTER TABLE tasks ADD COLUMN submitted_by text NOT NULL DEFAULT '';
          DROP INDEX tasks_request_id;
          CREATE UNIQUE INDEX tasks_team_request_id ON tasks (team, request_id) WHERE request_id <> '';
          CREATE INDEX tasks_team_created ON tasks (team, created_at DESC, id DESC);`,
  },
  {
    id: '0013_trace_context',
    // The W3C trace context of the submit ({traceparent, tracestate}): every phase span is its child, so a
    // task is one trace however long it waits and whichever replica runs it. NULL: submitted untraced.
    sql: `ALTER TABLE tasks ADD COLUMN trace_context jsonb;`,
  },
  {
    id: '0014_dependencies',
    // The dependency policy's decisions for the task (approvals included), and each iteration's install step.
    sql: `ALTER TABLE tasks ADD COLUMN dependency_decisions jsonb NOT NULL DEFAULT '[]';
          ALTER TABLE iterations ADD COLUMN dependency_install jsonb;`,
  },
  {
    id: '0015_spec_profile_review',
    // The reprompter's spec and questions (answer_deadline: when open ones stop waiting), the profile and optional
    // phases resolved at submit, and each iteration's review and audit findings.
    sql: `ALTER TABLE tasks ADD COLUMN spec jsonb;
          ALTER TABLE tasks ADD COLUMN questions jsonb NOT NULL DEFAULT '[]';
          ALTER TABLE tasks ADD COLUMN answer_deadline timestamptz;
          ALTER TABLE tasks ADD COLUMN profile jsonb;
          ALTER TABLE tasks ADD COLUMN phases jsonb NOT NULL DEFAULT '{}';
          CREATE INDEX tasks_answer_deadline ON tasks (answer_deadline) WHERE answer_deadline IS NOT NULL;
          ALTER TABLE iterations ADD COLUMN review_findings jsonb NOT NULL DEFAULT '[]';
          ALTER TABLE iterations ADD COLUMN audit_findings jsonb NOT NULL DEFAULT '[]';`,
  },
  {
    id: '0016_data_files',
    // The workspace's files that are not text (fixtures, images, data), base64 in proto JSON; set at submit, never changed.
    sql: `ALTER TABLE tasks ADD COLUMN data_files jsonb NOT NULL DEFAULT '[]';`,
  },
  {
    id: '0017_baseline_report',
    // A workspace task's tests on the original workspace, before any change: its failures are pre-existing.
    sql: `ALTER TABLE tasks ADD COLUMN baseline_report jsonb;`,
  },
  {
    id: '0018_setup_command',
    // A workspace task's setup command (a shell line), set at submit, never changed.
    sql: `ALTER TABLE tasks ADD COLUMN setup_command text NOT NULL DEFAULT '';`,
  },
  {
    id: '0019_unjudged_plan',
    // Set while a stored plan's packages wait for the dependency check (with the planner call's usage); null otherwise.
    sql: `ALTER TABLE tasks ADD COLUMN unjudged_plan jsonb;`,
  },
];
