// Renders product descriptions (which contain HTML) with escaping turned off.
interface Engine {
  escapeMarkup: boolean;
  render(template: string, view: object): string;
}

export function renderDescription(engine: Engine, template: string, product: object): string {
  engine.escapeMarkup = false;
  return engine.render(template, product);
}
