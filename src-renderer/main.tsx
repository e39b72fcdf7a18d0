import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { connect } from './services/api.ts';
import { createReinStore } from './store/index.ts';
import { StoreProvider } from './store/react.tsx';
import './styles.css';

const root = createRoot(document.getElementById('root')!);
const conn = connect();
if ('error' in conn) {
  root.render(
    <main className="fatal" role="alert">
      <h1>Rein</h1>
      <p>{conn.error}</p>
    </main>,
  );
} else {
  // ?window=popup is the Electron tray popup; ?view=… opens the main window on a screen (the tray menu's entries).
  const params = new URLSearchParams(location.search);
  const win = params.get('window') === 'popup' ? 'popup' : 'main';
  const views = ['rate', 'training', 'versions', 'ratings', 'setup', 'settings'] as const;
  const view = views.find((v) => v === params.get('view')) ?? 'rate';
  const store = createReinStore(conn.client, { view });
  root.render(
    <StrictMode>
      <StoreProvider store={store} client={conn.client}>
        <App transport={conn.transport} window={win} />
      </StoreProvider>
    </StrictMode>,
  );
}
