// A traffic light state machine with an enum and a namespace.
export enum Light {
  Red,
  Green,
  Yellow,
}

export namespace Timing {
  export const seconds: Record<Light, number> = { [Light.Red]: 30, [Light.Green]: 25, [Light.Yellow]: 5 };
}

export function next(light: Light): Light {
  return light === Light.Red ? Light.Green : light === Light.Green ? Light.Yellow : Light.Red;
}
