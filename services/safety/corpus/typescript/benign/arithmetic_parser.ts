// Evaluates arithmetic with a recursive-descent parser, without eval.
export function evaluate(text: string): number {
  const tokens = text.match(/\d+(\.\d+)?|[-+*/()]/g) ?? [];
  let position = 0;
  const peek = (): string | undefined => tokens[position];
  const next = (): string => {
    const token = tokens[position++];
    if (token === undefined) throw new Error('unexpected end of input');
    return token;
  };
  const factor = (): number => {
    const token = next();
    if (token === '(') {
      const value = expression();
      next();
      return value;
    }
    if (token === '-') return -factor();
    return Number(token);
  };
  const term = (): number => {
    let value = factor();
    while (peek() === '*' || peek() === '/') value = next() === '*' ? value * factor() : value / factor();
    return value;
  };
  const expression = (): number => {
    let value = term();
    while (peek() === '+' || peek() === '-') value = next() === '+' ? value + term() : value - term();
    return value;
  };
  return expression();
}
