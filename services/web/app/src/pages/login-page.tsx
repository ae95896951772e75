import { useState, type FormEvent } from 'react';
import { api, ApiError, tokenStore } from '../api';
import { useAuth } from '../auth';

/**
 * Sign-in: the person's Ratchet token (the one `ratchet token` printed for
 * them, or the one in the address `ratchet ui` printed). It is checked with
 * one call before the dashboard opens, so a wrong token is said here.
 */
export function LoginPage() {
  const auth = useAuth();
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | undefined>(auth.reason);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (token.trim() === '') {
      setProblem('Enter your token.');
      return;
    }
    setBusy(true);
    tokenStore.set(token.trim());
    try {
      await api('/api/tasks?pageSize=1');
      auth.signIn(token);
    } catch (error) {
      tokenStore.clear();
      setProblem(error instanceof ApiError ? error.message : String(error));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="login">
      <form className="panel login-form" onSubmit={(event) => void submit(event)}>
        <h1>Ratchet</h1>
        <p className="muted">Sign in with your Ratchet token. An operator makes one with <code>ratchet token</code>; <code>ratchet ui</code> prints an address that signs you in.</p>
        <label>
          Token
          <input type="password" name="token" autoComplete="off" value={token} onChange={(event) => setToken(event.target.value)} autoFocus />
        </label>
        {problem !== undefined && (
          <p className="error-note" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
