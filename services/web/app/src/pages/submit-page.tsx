import { useMemo, useState, type FormEvent } from 'react';
import { api, ApiError } from '../api';
import { ErrorNote } from '../components/common';
import { useAction, useLoad } from '../hooks';
import { navigate } from '../router';
import type { ProjectProfile, Task } from '../types';

type Switch = 'default' | 'on' | 'off';

/** 128 random bits in hex (crypto.randomUUID needs HTTPS; this works over plain HTTP too). */
function randomId(): string {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** The optional phases a task may switch on or off; `default` leaves it to the server's configuration. */
const phaseSwitches: readonly { readonly key: 'reprompt' | 'questions' | 'review' | 'audit'; readonly label: string; readonly help: string }[] = [
  { key: 'reprompt', label: 'Spec first', help: 'turn the goal into a structured spec before planning' },
  { key: 'questions', label: 'Clarifying questions', help: 'let the spec writer ask you questions (else it states its assumptions)' },
  { key: 'review', label: 'Review', help: 'a reviewer reads each change before the tests run' },
  { key: 'audit', label: 'Security audit', help: 'a security auditor reads each change before the tests run' },
];

/** A new task: goal, language, profile, optional phases, and whether a person approves the result. */
export function SubmitPage() {
  const [goal, setGoal] = useState('');
  const [language, setLanguage] = useState('python');
  const [profile, setProfile] = useState('');
  const [project, setProject] = useState('');
  const [maxIterations, setMaxIterations] = useState('');
  const [requireApproval, setRequireApproval] = useState(false);
  const [switches, setSwitches] = useState<Record<string, Switch>>({ reprompt: 'default', questions: 'default', review: 'default', audit: 'default' });
  // One id per form: a second click on Submit returns the same task instead of a second one.
  const requestId = useMemo(randomId, []);
  const profiles = useLoad((signal) => api<{ profiles?: ProjectProfile[] }>('/api/profiles', { signal }), []);
  const submit = useAction();

  const send = async (event: FormEvent) => {
    event.preventDefault();
    await submit.run(async () => {
      if (goal.trim() === '') throw new ApiError(400, 'INVALID_ARGUMENT', 'Say what the code should do: the goal is empty.');
      const answer = await api<{ task?: Task }>('/api/tasks', {
        body: {
          goal,
          language,
          requestId,
          requireApproval,
          ...(profile === '' ? {} : { profile }),
          ...(project.trim() === '' ? {} : { project: project.trim() }),
          ...(maxIterations.trim() === '' ? {} : { maxIterations: Number(maxIterations) }),
          ...switches,
        },
      });
      if (answer.task?.id !== undefined) navigate(`/tasks/${answer.task.id}`);
    });
  };

  const profileList = profiles.data?.profiles ?? [];
  return (
    <main>
      <h1>New task</h1>
      <form className="panel submit-form" onSubmit={(event) => void send(event)}>
        <label>
          Goal
          <textarea name="goal" rows={4} value={goal} onChange={(event) => setGoal(event.target.value)} placeholder="a CLI that manages TODO items in a JSON file" />
        </label>
        <div className="form-row">
          <label>
            Language
            <select name="language" value={language} onChange={(event) => setLanguage(event.target.value)}>
              <option value="python">Python</option>
              <option value="typescript">TypeScript</option>
              <option value="javascript">JavaScript</option>
            </select>
          </label>
          <label>
            Profile
            <select name="profile" value={profile} onChange={(event) => setProfile(event.target.value)} disabled={profileList.length === 0}>
              <option value="">none</option>
              {profileList.map((item) => (
                <option key={item.name} value={item.name} title={item.description}>
                  {item.name}
                  {item.description ? ` — ${item.description}` : ''}
                </option>
              ))}
            </select>
            {profiles.error !== undefined && <span className="hint">{profiles.error.code === 'UNIMPLEMENTED' ? 'This server does not list profiles yet.' : profiles.error.message}</span>}
          </label>
          <label>
            Max iterations
            <input name="maxIterations" type="number" min={1} max={100} placeholder="server default" value={maxIterations} onChange={(event) => setMaxIterations(event.target.value)} />
          </label>
          <label>
            Project
            <input name="project" placeholder="none (global lessons)" value={project} onChange={(event) => setProject(event.target.value)} />
          </label>
        </div>
        <fieldset>
          <legend>Optional phases</legend>
          {phaseSwitches.map((phase) => (
            <label key={phase.key} className="switch-row" title={phase.help}>
              <span>
                {phase.label} <span className="hint">{phase.help}</span>
              </span>
              <select name={phase.key} value={switches[phase.key]} onChange={(event) => setSwitches({ ...switches, [phase.key]: event.target.value as Switch })}>
                <option value="default">server default</option>
                <option value="on">on</option>
                <option value="off">off</option>
              </select>
            </label>
          ))}
        </fieldset>
        <label className="checkbox">
          <input type="checkbox" name="requireApproval" checked={requireApproval} onChange={(event) => setRequireApproval(event.target.checked)} />
          A person approves the passing result before the task succeeds
        </label>
        <ErrorNote error={submit.error} what="take this task" />
        <button type="submit" disabled={submit.busy}>
          {submit.busy ? 'Submitting…' : 'Submit task'}
        </button>
      </form>
    </main>
  );
}
