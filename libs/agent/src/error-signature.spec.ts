import { describe, expect, it } from '@jest/globals';
import { errorSignature, splitErrorMessage } from './error-signature';

describe('errorSignature', () => {
  it('gives the same signature to the same mistake with different names, numbers and paths', () => {
    const first = errorSignature('NameError', "name 'parse_items' is not defined (/tmp/ratchet-ab12/todo.py, line 14)");
    const second = errorSignature('NameError', "name 'load_todos' is not defined (/tmp/ratchet-zz99/app/todo.py, line 3)");
    expect(first).toBe(second);
    expect(first).toBe("NameError: name '<v>' is not defined (<path>, line <n>)");
  });

  it('keeps what tells two mistakes apart', () => {
    expect(errorSignature('TypeError', 'x is not a function')).not.toBe(errorSignature('TypeError', 'x is not iterable'));
    expect(errorSignature('KeyError', 'boom')).not.toBe(errorSignature('ValueError', 'boom'));
  });

  it('replaces addresses, ids and floats, uses the first non-blank line and collapses whitespace', () => {
    expect(errorSignature('', '\n  object at 0x7f3a2c  id 123e4567-e89b-12d3-a456-426614174000 took 1.5e3   ms\nsecond line')).toBe('object at <hex> id <id> took <n> ms');
  });

  it('caps the length and handles blanks', () => {
    expect(errorSignature('E', 'word '.repeat(200)).length).toBe(240);
    expect(errorSignature('', '   ')).toBe('');
    expect(errorSignature('AssertionError', '')).toBe('AssertionError');
  });
});

describe('splitErrorMessage', () => {
  it('splits pytest and node failure lines into type and message', () => {
    expect(splitErrorMessage('E   AssertionError: assert 2 == 3')).toEqual({ errorType: 'AssertionError', message: 'assert 2 == 3' });
    expect(splitErrorMessage('json.decoder.JSONDecodeError: Expecting value')).toEqual({ errorType: 'json.decoder.JSONDecodeError', message: 'Expecting value' });
    expect(splitErrorMessage('\nTypeError [ERR_X]: bad')).toEqual({ errorType: 'TypeError', message: '[ERR_X]: bad' });
    expect(splitErrorMessage('expected 3 to equal 4')).toEqual({ errorType: '', message: 'expected 3 to equal 4' });
  });
});
