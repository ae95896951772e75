import { useState } from 'react';
import { api } from '../api';
import { enumLabel, formatTime } from '../format';
import { useAction } from '../hooks';
import type { ApprovalGate, Task } from '../types';
import { ErrorNote, Section } from './common';

/**
 * The task's approval gates: the pending one with Approve and Reject (and
 * a comment, which a rejection feeds back to the loop), then the decided ones.
 */
export function Approvals(props: { readonly task: Task; readonly approvals: readonly ApprovalGate[]; readonly onDecided: () => void }) {
  const [comment, setComment] = useState('');
  const action = useAction();
  if (props.approvals.length === 0) return null;
  const pending = props.approvals.filter((gate) => gate.decision === 'APPROVAL_DECISION_PENDING');
  const decided = props.approvals.filter((gate) => gate.decision !== 'APPROVAL_DECISION_PENDING');
  const decide = (gate: ApprovalGate, decision: 'approve' | 'reject') =>
    action.run(async () => {
      await api(`/api/tasks/${encodeURIComponent(props.task.id ?? '')}/approvals/${encodeURIComponent(gate.gateId ?? '')}`, { body: { decision, comment } });
      setComment('');
      props.onDecided();
    });
  return (
    <Section title={pending.length > 0 ? 'Waiting for your approval' : 'Approvals'} className={pending.length > 0 ? 'attention' : ''}>
      {pending.map((gate) => (
        <div key={gate.gateId} className="gate" data-gate-id={gate.gateId}>
          <p>
            <strong>{enumLabel(gate.kind, 'APPROVAL_KIND')}</strong> (iteration {gate.iteration ?? 0}, {formatTime(gate.requestedAt)}): {gate.summary}
          </p>
          {gate.detail !== undefined && gate.detail !== '' && <pre className="gate-detail">{gate.detail}</pre>}
          <label>
            Comment <span className="hint">recorded with your decision; a rejection tells the loop what to change</span>
            <textarea rows={2} value={comment} onChange={(event) => setComment(event.target.value)} />
          </label>
          <div className="buttons">
            <button type="button" disabled={action.busy} onClick={() => void decide(gate, 'approve')}>
              Approve
            </button>
            <button type="button" className="danger" disabled={action.busy} onClick={() => void decide(gate, 'reject')}>
              Reject
            </button>
          </div>
        </div>
      ))}
      <ErrorNote error={action.error} what="decide gates" />
      {decided.length > 0 && (
        <ul className="plain">
          {decided.map((gate) => (
            <li key={gate.gateId}>
              {enumLabel(gate.kind, 'APPROVAL_KIND')} {gate.decision === 'APPROVAL_DECISION_APPROVED' ? 'approved' : 'rejected'} by {gate.approver || 'someone'}
              {gate.decidedAt !== undefined ? ` at ${formatTime(gate.decidedAt)}` : ''}
              {gate.comment ? `: ${gate.comment}` : ''}
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

/**
 * The reprompter's clarifying questions: open ones with an answer box
 * (suggested answers fill it; left empty, the stated assumption holds),
 * answered ones with their answers.
 */
export function Questions(props: { readonly task: Task; readonly onAnswered: () => void }) {
  const questions = props.task.questions ?? [];
  const [answers, setAnswers] = useState<Record<string, string>>({});
  const action = useAction();
  if (questions.length === 0) return null;
  const open = questions.filter((question) => (question.answer ?? '') === '' && (question.answeredBy ?? '') === '');
  const send = () =>
    action.run(async () => {
      await api(`/api/tasks/${encodeURIComponent(props.task.id ?? '')}/answers`, { body: { answers: open.map((question) => ({ questionId: question.questionId ?? '', answer: answers[question.questionId ?? ''] ?? '' })) } });
      props.onAnswered();
    });
  return (
    <Section title={open.length > 0 ? 'Questions for you' : 'Questions'} className={open.length > 0 ? 'attention' : ''}>
      {questions.map((question) => {
        const id = question.questionId ?? '';
        const isOpen = open.includes(question);
        return (
          <div key={id} className="question">
            <p>
              <strong>{question.question}</strong>
              {question.why ? <span className="hint"> {question.why}</span> : null}
            </p>
            {isOpen ? (
              <>
                {(question.options ?? []).length > 0 && (
                  <div className="buttons">
                    {(question.options ?? []).map((option) => (
                      <button key={option} type="button" className="chip" onClick={() => setAnswers({ ...answers, [id]: option })}>
                        {option}
                      </button>
                    ))}
                  </div>
                )}
                <input aria-label={`answer to: ${question.question ?? ''}`} value={answers[id] ?? ''} placeholder={question.assumption ? `empty: ${question.assumption}` : 'your answer'} onChange={(event) => setAnswers({ ...answers, [id]: event.target.value })} />
              </>
            ) : (
              <p className="muted">
                {question.answer || question.assumption} <span className="hint">({question.answeredBy || 'assumption'})</span>
              </p>
            )}
          </div>
        );
      })}
      {open.length > 0 && (
        <button type="button" disabled={action.busy} onClick={() => void send()}>
          Send answers
        </button>
      )}
      <ErrorNote error={action.error} what="take answers" />
    </Section>
  );
}
