import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError } from './api';
import { useAuth } from './auth';

export interface Loaded<T> {
  readonly data?: T;
  readonly error?: ApiError;
  readonly loading: boolean;
  /** Loads again now (after an action changed what is shown). */
  reload(): void;
}

/**
 * Loads what a page shows, again every `refreshMs` when given (a live list),
 * and when `deps` change. A refused token signs the person out; other
 * failures are kept in `error`, with the last data still shown.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[], refreshMs?: number): Loaded<T> {
  const auth = useAuth();
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(() => setTick((value) => value + 1), []);

  useEffect(() => {
    const controller = new AbortController();
    setState((previous) => ({ ...previous, loading: true }));
    loadRef.current(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setState({ data, loading: false });
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        if (auth.handle(error)) return;
        const apiError = error instanceof ApiError ? error : new ApiError(0, 'UNKNOWN', (error as Error).message);
        setState((previous) => ({ ...previous, error: apiError, loading: false }));
      },
    );
    return () => controller.abort();
    // The caller's `deps` say when to load again, as with useEffect's own.
  }, [...deps, tick]);

  useEffect(() => {
    if (refreshMs === undefined) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') setTick((value) => value + 1);
    }, refreshMs);
    return () => clearInterval(timer);
  }, [refreshMs]);

  return { ...state, reload };
}

/** Runs an action (approve, answer, submit) and keeps its failure to show; a refused token signs out. */
export function useAction(): { busy: boolean; error?: ApiError; run(action: () => Promise<unknown>): Promise<boolean> } {
  const auth = useAuth();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | undefined>();
  const run = useCallback(
    async (action: () => Promise<unknown>) => {
      setBusy(true);
      setError(undefined);
      try {
        await action();
        return true;
      } catch (caught) {
        if (!auth.handle(caught)) setError(caught instanceof ApiError ? caught : new ApiError(0, 'UNKNOWN', (caught as Error).message));
        return false;
      } finally {
        setBusy(false);
      }
    },
    [auth],
  );
  return { busy, ...(error === undefined ? {} : { error }), run };
}
