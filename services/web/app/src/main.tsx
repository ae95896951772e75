import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { takeTokenFromAddress } from './api';
import { App } from './app';
import './styles.css';

takeTokenFromAddress();
const root = document.getElementById('root');
if (root !== null) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
