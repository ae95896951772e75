/** The slice of a pino logger the bus writes to; any pino `Logger` fits. */
export interface BusLogger {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}
