import { useEffect, useState, type MouseEvent, type ReactNode } from 'react';

/** The pages of the dashboard, by path. */
export type Route =
  | { readonly page: 'tasks' }
  | { readonly page: 'submit' }
  | { readonly page: 'task'; readonly taskId: string }
  | { readonly page: 'lessons' }
  | { readonly page: 'lesson'; readonly lessonId: string }
  | { readonly page: 'not-found'; readonly path: string };

/** The route of a path: /, /tasks/new, /tasks/ID, /lessons, /lessons/ID. */
export function routeOf(pathname: string): Route {
  const parts = pathname.split('/').filter((part) => part !== '').map(decodeURIComponent);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'tasks')) return { page: 'tasks' };
  if (parts[0] === 'tasks' && parts.length === 2) return parts[1] === 'new' ? { page: 'submit' } : { page: 'task', taskId: parts[1] ?? '' };
  if (parts[0] === 'lessons' && parts.length === 1) return { page: 'lessons' };
  if (parts[0] === 'lessons' && parts.length === 2) return { page: 'lesson', lessonId: parts[1] ?? '' };
  return { page: 'not-found', path: pathname };
}

const changed = 'ratchet:navigate';

/** Goes to `path` within the app, keeping history. */
export function navigate(path: string): void {
  window.history.pushState(null, '', path);
  window.dispatchEvent(new Event(changed));
  window.scrollTo(0, 0);
}

/** The current route, following links and the browser's back and forward. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(window.location.pathname));
  useEffect(() => {
    const update = () => setRoute(routeOf(window.location.pathname));
    window.addEventListener('popstate', update);
    window.addEventListener(changed, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(changed, update);
    };
  }, []);
  return route;
}

/** A link within the app: a real <a> (it opens in a new tab too), followed without a reload. */
export function Link(props: { readonly to: string; readonly className?: string; readonly title?: string; readonly children: ReactNode }) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={props.to} className={props.className} title={props.title} onClick={follow}>
      {props.children}
    </a>
  );
}
