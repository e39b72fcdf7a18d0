import { useEffect, useRef } from 'react';
import type { ReactNode } from 'react';

/** A modal confirmation (the native <dialog>: focus stays inside, Escape cancels). */
export function Confirm(props: { title: string; children: ReactNode; confirmLabel: string; cancelLabel?: string; danger?: boolean; onConfirm: () => void; onCancel: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog ref={ref} className="confirm" aria-labelledby="confirm-title" onCancel={props.onCancel} data-testid="confirm">
      <h2 id="confirm-title">{props.title}</h2>
      <div className="confirm-body">{props.children}</div>
      <div className="confirm-actions">
        <button type="button" className="secondary" onClick={props.onCancel}>
          {props.cancelLabel ?? 'Cancel'}
        </button>
        <button type="button" className={props.danger ? 'danger' : 'primary'} onClick={props.onConfirm} autoFocus>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
