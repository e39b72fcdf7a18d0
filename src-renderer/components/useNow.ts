import { useEffect, useState } from 'react';

/** The current time, refreshed every `everyMs`, so relative times ("5 min ago") do not freeze. */
export function useNow(everyMs = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}
