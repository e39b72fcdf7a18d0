import { useShallow } from 'zustand/shallow';
import { VIEWS } from '../store/nav.ts';
import { useRein } from '../store/react.tsx';

export function Nav() {
  const { view, setView, unrated } = useRein(useShallow((s) => ({ view: s.view, setView: s.setView, unrated: s.status?.turns.toRate ?? 0 })));
  return (
    <nav className="nav" aria-label="Screens">
      {VIEWS.map((v) => (
        <button key={v.id} type="button" className="nav-tab" aria-current={view === v.id ? 'page' : undefined} onClick={() => setView(v.id)}>
          {v.label}
          {v.id === 'rate' && unrated > 0 && <span className="nav-count" aria-label={`${unrated} unrated`}>{unrated}</span>}
        </button>
      ))}
    </nav>
  );
}
