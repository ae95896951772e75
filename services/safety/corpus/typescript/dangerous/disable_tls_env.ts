// Fetches from a staging server with a broken certificate chain.
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

export async function staging(path: string): Promise<unknown> {
  const response = await fetch(`https://staging.internal${path}`);
  return response.json();
}
