// A <select> of the versions that can answer: the active one (the default), the base, or any version with files.
import { useMemo } from 'react';
import { versionChoices } from '../store/chat.ts';
import { useRein } from '../store/react.tsx';

export function VersionPicker(props: { id: string; label: string; value: number | null; onChange: (v: number | null) => void; allowActive?: boolean; disabled?: boolean }) {
  // Derived from the adapters list (a new array of new objects on each call, so not a selector).
  const adapters = useRein((s) => s.adapters);
  const choices = useMemo(() => versionChoices(adapters), [adapters]);
  const allowActive = props.allowActive ?? true;
  return (
    <label className="inline-field" htmlFor={props.id}>
      <span>{props.label}</span>
      <select
        id={props.id}
        value={props.value === null ? 'active' : String(props.value)}
        disabled={props.disabled}
        onChange={(e) => props.onChange(e.target.value === 'active' ? null : Number(e.target.value))}
      >
        {allowActive && <option value="active">Active version</option>}
        {choices.map((c) => (
          <option key={c.version} value={c.version}>
            {c.label}
          </option>
        ))}
      </select>
    </label>
  );
}
