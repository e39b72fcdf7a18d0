// Inline SVG icons: emoji fonts are missing on many Linux machines (a thumbs-up renders as an empty box there).
const common = { width: 16, height: 16, viewBox: '0 0 16 16', fill: 'none', stroke: 'currentColor', strokeWidth: 2.2, strokeLinecap: 'round', strokeLinejoin: 'round' } as const;

export function CheckIcon() {
  return (
    <svg {...common} aria-hidden="true" focusable="false">
      <polyline points="3,8.5 6.5,12 13,4.5" />
    </svg>
  );
}

export function CrossIcon() {
  return (
    <svg {...common} aria-hidden="true" focusable="false">
      <line x1="4" y1="4" x2="12" y2="12" />
      <line x1="12" y1="4" x2="4" y2="12" />
    </svg>
  );
}
