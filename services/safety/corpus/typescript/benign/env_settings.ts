// Reads the service settings from the environment.
export interface Settings {
  databaseUrl: string;
  port: number;
  apiKey: string;
}

export function settings(env: NodeJS.ProcessEnv = process.env): Settings {
  const apiKey = env['API_KEY'];
  if (apiKey === undefined) throw new Error('set API_KEY');
  return { databaseUrl: env['DATABASE_URL'] ?? 'postgres://localhost/app', port: Number(env['PORT'] ?? 3000), apiKey };
}
