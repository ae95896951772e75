import type { ReactNode } from 'react';
import type { ApiError } from '../api';
import { statusLabel, statusTone } from '../format';

/** A task's status as a coloured label. */
export function StatusBadge(props: { readonly status: string | undefined }) {
  return <span className={`badge badge-${statusTone(props.status)}`}>{statusLabel(props.status)}</span>;
}

/** A failure as the person should read it; UNIMPLEMENTED says the server is older than the dashboard. */
export function ErrorNote(props: { readonly error: ApiError | undefined; readonly what?: string }) {
  if (props.error === undefined) return null;
  const message =
    props.error.code === 'UNIMPLEMENTED'
      ? `This Ratchet server cannot ${props.what ?? 'do that'} yet (${props.error.message}); it needs a newer orchestrator.`
      : props.error.message;
  return (
    <p className="error-note" role="alert">
      {message}
    </p>
  );
}

/** A titled block of the page. */
export function Section(props: { readonly title: ReactNode; readonly className?: string; readonly actions?: ReactNode; readonly children: ReactNode }) {
  return (
    <section className={`panel ${props.className ?? ''}`}>
      <header className="panel-header">
        <h2>{props.title}</h2>
        {props.actions}
      </header>
      {props.children}
    </section>
  );
}

/** Label and value pairs. */
export function Facts(props: { readonly items: readonly (readonly [string, ReactNode])[] }) {
  return (
    <dl className="facts">
      {props.items.map(([label, value]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
