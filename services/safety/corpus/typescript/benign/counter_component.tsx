// A counter component.
import { useState } from 'react';

export function Counter({ start = 0 }: { start?: number }) {
  const [count, setCount] = useState<number>(start);
  return <button onClick={() => setCount(count + 1)}>{count}</button>;
}
