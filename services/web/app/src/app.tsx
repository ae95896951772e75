import { AuthProvider, useAuth } from './auth';
import { LessonPage } from './pages/lesson-page';
import { LessonsPage } from './pages/lessons-page';
import { LoginPage } from './pages/login-page';
import { SubmitPage } from './pages/submit-page';
import { TaskListPage } from './pages/task-list-page';
import { TaskPage } from './pages/task-page';
import { Link, useRoute, type Route } from './router';

function Page(props: { readonly route: Route }) {
  const { route } = props;
  switch (route.page) {
    case 'tasks':
      return <TaskListPage />;
    case 'submit':
      return <SubmitPage />;
    case 'task':
      return <TaskPage key={route.taskId} taskId={route.taskId} />;
    case 'lessons':
      return <LessonsPage />;
    case 'lesson':
      return <LessonPage key={route.lessonId} lessonId={route.lessonId} />;
    default:
      return (
        <main>
          <h1>Not found</h1>
          <p>
            There is no page at <code>{route.path}</code>. <Link to="/">See the tasks.</Link>
          </p>
        </main>
      );
  }
}

function Shell() {
  const auth = useAuth();
  const route = useRoute();
  if (!auth.signedIn) return <LoginPage />;
  const current = route.page === 'lessons' || route.page === 'lesson' ? 'lessons' : route.page === 'submit' ? 'submit' : 'tasks';
  return (
    <>
      <nav className="top">
        <Link to="/" className="brand">
          Ratchet
        </Link>
        <Link to="/" className={current === 'tasks' ? 'current' : ''}>
          Tasks
        </Link>
        <Link to="/tasks/new" className={current === 'submit' ? 'current' : ''}>
          New task
        </Link>
        <Link to="/lessons" className={current === 'lessons' ? 'current' : ''}>
          Lessons
        </Link>
        <button type="button" className="link sign-out" onClick={() => auth.signOut()}>
          Sign out
        </button>
      </nav>
      <Page route={route} />
    </>
  );
}

/** The dashboard: sign-in, then the tasks, a task followed live, the submit form and the lessons. */
export function App() {
  return (
    <AuthProvider>
      <Shell />
    </AuthProvider>
  );
}
