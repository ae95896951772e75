// Fetches a user from a JSON API with a timeout.
export interface User {
  id: number;
  name: string;
}

export async function fetchUser(baseUrl: string, id: number): Promise<User> {
  const response = await fetch(`${baseUrl}/users/${id}`, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return (await response.json()) as User;
}
