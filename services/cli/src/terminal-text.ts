/**
 * Code points a terminal acts on rather than shows, besides new line and
 * tab: C0 controls (ESC starts every CSI, OSC, DCS, APC sequence: titles,
 * erased lines, hyperlinks, clipboard writes), DEL, C1 controls
 * (U+0080-U+009F: 8-bit CSI, OSC, DCS...), and the bidirectional overrides
 * and isolates that reorder what is shown (U+202A-U+202E, U+2066-U+2069).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point.
const unsafeCodePoints = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` made inert for a terminal: every code point a terminal would act
 * on (see above) is written as its `\uXXXX` escape, visibly, so nothing a
 * goal, a model, a server or a file name carries can set the title, move
 * the cursor, erase lines, make links or reorder the line, and the reader
 * sees that something was there. New lines and tabs stay; a CRLF line end
 * becomes a new line. Inside a JSON string the escapes mean what the raw
 * characters meant, so `--json` lines stay valid and equal in value.
 */
export function terminalSafe(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(unsafeCodePoints, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
