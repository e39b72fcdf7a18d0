// Every setting, generated from describeSettings (common/config.ts: schema, default, group and help), in sections.
// A screen that points to a setting opens it here with openSetting(key): the screen scrolls to that field and
// focuses it.
import { useEffect } from 'react';
import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { selectSettingSections } from '../store/settings.ts';
import { SettingRow, settingDomId } from './SettingField.tsx';

export function SettingsView() {
  const { settings, sections, load, error, focus, clearFocus } = useRein(
    useShallow((s) => ({
      settings: s.settings,
      sections: selectSettingSections(s),
      load: s.loadSettingDescriptions,
      error: s.settingsError,
      focus: s.settingFocus,
      clearFocus: s.clearSettingFocus,
    })),
  );
  useEffect(() => void load(), [load]);
  const ready = settings !== null && sections.length > 0;
  useEffect(() => {
    if (!ready || focus === null) return;
    const row = document.getElementById(settingDomId(focus));
    if (!row) return;
    for (const d of row.querySelectorAll('details')) d.open = true;
    row.scrollIntoView({ block: 'center' });
    row.querySelector<HTMLElement>('input, select, textarea')?.focus({ preventScroll: true });
    row.classList.add('flash');
    const t = setTimeout(() => row.classList.remove('flash'), 2500);
    clearFocus();
    return () => clearTimeout(t);
  }, [ready, focus, clearFocus]);
  if (!ready) return error ? <p className="error" role="alert">{error.message}</p> : <p className="muted">Loading settings…</p>;
  return (
    <div className="screen settings-screen">
      <nav className="panel settings-toc" aria-label="Settings sections">
        {sections.map((g) => (
          <button key={g.group} type="button" className="link" onClick={() => document.getElementById(`settings-${g.group}`)?.scrollIntoView({ block: 'start' })}>
            {g.title}
          </button>
        ))}
      </nav>
      {error && (
        <p className="error" role="alert">
          {error.message}
        </p>
      )}
      {sections.map((g) => (
        <section key={g.group} className="panel settings" id={`settings-${g.group}`} aria-labelledby={`settings-${g.group}-title`}>
          <h2 id={`settings-${g.group}-title`}>{g.title}</h2>
          {g.blurb && <p className="muted small">{g.blurb}</p>}
          {g.items.map((d) => (
            <SettingRow key={d.key} d={d} />
          ))}
        </section>
      ))}
      <p className="muted small">Changes are checked and saved when you leave a field (or press Enter); Escape puts the saved value back.</p>
    </div>
  );
}
