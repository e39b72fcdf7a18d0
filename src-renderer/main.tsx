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
  const store = createReinStore(conn.client);
  root.render(
    <StrictMode>
      <StoreProvider store={store} client={conn.client}>
        <App transport={conn.transport} />
      </StoreProvider>
    </StrictMode>,
  );
}
