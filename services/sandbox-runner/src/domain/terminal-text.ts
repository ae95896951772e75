/**
 * Output of the code under test with every terminal control sequence removed,
 * so it can neither move a user's cursor, retitle their terminal, hide text
 * nor write to their clipboard when printed, nor smuggle such sequences into
 * a model's prompt. Removed: ESC sequences (CSI `ESC [`, OSC `ESC ]`, DCS,
 * SOS, PM, APC and two-byte ones), their 8-bit C1 forms in UTF-8
 * (U+0080-U+009F), every other C0 control but tab and newline, DEL, and
 * carriage returns not followed by a newline (they overwrite a line).
 * Everything else, invalid UTF-8 included, is kept byte for byte.
 */
export function stripControlSequences(input: Buffer): Buffer {
  const output = Buffer.allocUnsafe(input.length);
  let length = 0;
  let index = 0;
  while (index < input.length) {
    const byte = input[index] as number;
    if (byte === 0x1b) {
      index = skipEscape(input, index + 1);
      continue;
    }
    // C1 controls encoded in UTF-8: 0xC2 0x80-0x9F. CSI, OSC, DCS and friends take a payload.
    if (byte === 0xc2 && index + 1 < input.length && (input[index + 1] as number) >= 0x80 && (input[index + 1] as number) <= 0x9f) {
      const c1 = input[index + 1] as number;
      index += 2;
      if (c1 === 0x9b) index = skipCsiBody(input, index);
      else if (c1 === 0x9d || c1 === 0x90 || c1 === 0x98 || c1 === 0x9e || c1 === 0x9f) index = skipStringBody(input, index);
      continue;
    }
    if (byte === 0x0d) {
      if (input[index + 1] === 0x0a) output[length++] = 0x0d;
      index += 1;
      continue;
    }
    if ((byte < 0x20 && byte !== 0x09 && byte !== 0x0a) || byte === 0x7f) {
      index += 1;
      continue;
    }
    output[length++] = byte;
    index += 1;
  }
  return output.subarray(0, length);
}

/** Index after the escape sequence whose ESC was just before `index`. */
function skipEscape(input: Buffer, index: number): number {
  if (index >= input.length) return index;
  const kind = input[index] as number;
  if (kind === 0x5b) return skipCsiBody(input, index + 1); // ESC [
  // ESC ] (OSC), ESC P (DCS), ESC X (SOS), ESC ^ (PM), ESC _ (APC): a string up to BEL or ST.
  if (kind === 0x5d || kind === 0x50 || kind === 0x58 || kind === 0x5e || kind === 0x5f) return skipStringBody(input, index + 1);
  // nF sequences: intermediates 0x20-0x2F then one final byte.
  let cursor = index;
  while (cursor < input.length && (input[cursor] as number) >= 0x20 && (input[cursor] as number) <= 0x2f) cursor += 1;
  return cursor < input.length ? cursor + 1 : cursor;
}

/** CSI: parameter and intermediate bytes 0x20-0x3F, then a final byte 0x40-0x7E. */
function skipCsiBody(input: Buffer, index: number): number {
  let cursor = index;
  while (cursor < input.length) {
    const byte = input[cursor] as number;
    cursor += 1;
    if (byte >= 0x40 && byte <= 0x7e) return cursor;
    if (byte < 0x20 || byte > 0x3f) return cursor - 1; // malformed: resume at the odd byte
  }
  return cursor;
}

/**
 * A control string ends at BEL, ESC \ or the 8-bit ST (0xC2 0x9C). One not
 * ended within 4 KiB is dropped alone, so a stray OSC cannot hide the rest.
 */
function skipStringBody(input: Buffer, index: number): number {
  let cursor = index;
  const limit = Math.min(input.length, index + 4096);
  while (cursor < limit) {
    const byte = input[cursor] as number;
    if (byte === 0x07) return cursor + 1;
    if (byte === 0x1b && input[cursor + 1] === 0x5c) return cursor + 2;
    if (byte === 0xc2 && input[cursor + 1] === 0x9c) return cursor + 2;
    cursor += 1;
  }
  return cursor === input.length ? cursor : index;
}
