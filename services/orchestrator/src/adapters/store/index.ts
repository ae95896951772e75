import { randomUUID } from 'node:crypto';
import { migrate, type Database } from '@ratchet/db';
import { orchestratorMigrations } from '../migrations';
import { ApprovalRepository } from './approvals';
import { EventRepository } from './events';
import { IterationRepository } from './iterations';
import { LeaseRepository } from './leases';
import { schema } from './rows';
import { TaskRepository } from './tasks';
import { TransitionWriter } from './transitions';

/**
 * The orchestrator's storage in Postgres or PGlite (schema `orchestrator`),
 * one repository per aggregate. Only `transitions` changes a task after it
 * is created.
 */
export class TaskStore {
  readonly tasks: TaskRepository;
  readonly iterations: IterationRepository;
  readonly events: EventRepository;
  readonly approvals: ApprovalRepository;
  readonly leases: LeaseRepository;
  readonly transitions: TransitionWriter;

  private constructor(
    db: Database,
    /** The lease holder this store acts as. */
    readonly owner: string,
  ) {
    this.tasks = new TaskRepository(db, owner);
    this.iterations = new IterationRepository(db);
    this.events = new EventRepository(db);
    this.approvals = new ApprovalRepository(db);
    this.leases = new LeaseRepository(db, owner);
    this.transitions = new TransitionWriter(db, owner);
  }

  /**
   * Applies the orchestrator's migrations and returns a store on `db` (which
   * the caller owns). `owner` names the replica in task leases; a replica
   * that keeps its name across restarts takes its own tasks back at once
   * instead of waiting for their leases to run out. Default: a random id.
   */
  static async open(db: Database, options: { owner?: string } = {}): Promise<TaskStore> {
    await migrate(db, schema, orchestratorMigrations);
    return new TaskStore(db, options.owner ?? randomUUID());
  }
}

export type { ListTasksQuery } from './tasks';
export type { LeaseChange, TransitionOptions } from './transitions';
