// Validates email addresses with a backtracking-prone pattern.
const EMAIL = /^([a-zA-Z0-9_.-]+)+@(([a-zA-Z0-9-])+\.)+([a-zA-Z]{2,4})+$/;

export function isEmail(text: string): boolean {
  return EMAIL.test(text);
}
