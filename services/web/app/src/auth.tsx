import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from 'react';
import { ApiError, tokenStore } from './api';

interface Auth {
  readonly signedIn: boolean;
  /** Why the person was signed out (a refused token), to show on the sign-in form. */
  readonly reason?: string;
  signIn(token: string): void;
  signOut(reason?: string): void;
  /** Signs out on a 401 (and says why); rethrows nothing, returns whether it did. */
  handle(error: unknown): boolean;
}

const AuthContext = createContext<Auth | undefined>(undefined);

export function AuthProvider(props: { readonly children: ReactNode }) {
  const [signedIn, setSignedIn] = useState(() => tokenStore.get() !== undefined);
  const [reason, setReason] = useState<string | undefined>();
  const signIn = useCallback((token: string) => {
    tokenStore.set(token.trim());
    setReason(undefined);
    setSignedIn(true);
  }, []);
  const signOut = useCallback((why?: string) => {
    tokenStore.clear();
    setReason(why);
    setSignedIn(false);
  }, []);
  const handle = useCallback(
    (error: unknown) => {
      if (error instanceof ApiError && error.needsSignIn) {
        signOut(error.message);
        return true;
      }
      return false;
    },
    [signOut],
  );
  const value = useMemo<Auth>(() => ({ signedIn, ...(reason === undefined ? {} : { reason }), signIn, signOut, handle }), [signedIn, reason, signIn, signOut, handle]);
  return <AuthContext.Provider value={value}>{props.children}</AuthContext.Provider>;
}

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (auth === undefined) throw new Error('useAuth outside AuthProvider');
  return auth;
}
