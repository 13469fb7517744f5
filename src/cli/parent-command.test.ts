/**
 * The number options' grammar: plain decimal only — digits, and a fraction where the option takes
 * one — never a form `Number()` also reads (hex, exponents, padding, signs, Infinity), nor an
 * integer past what a double holds exactly. The options that use it, as processes: test/cli-usage.test.ts.
 */
import { expect, it } from 'vitest';
import { given, numberOf, parseNonNegativeInteger, parsePortNumber, parsePositiveInteger, parsePositiveNumber } from './parent-command.js';
import { UsageError } from './usage-error.js';

const NOT_PLAIN = [
  '',
  ' ',
  ' 5',
  '5 ',
  '\t5',
  '5\n',
  '0x10',
  '0X10',
  '0b1',
  '0o7',
  '1e3',
  '1E3',
  '1e-3',
  '+5',
  '-5',
  '-0',
  'Infinity',
  '-Infinity',
  'NaN',
  '1_000',
  '1,000',
  '٣', // an Arabic-Indic digit: a digit to \p{Nd}, not to Number()
  '5px',
  '.',
  '1.2.3',
];

it('takes plain decimal digits for an integer, and a fraction too for a decimal', () => {
  expect(numberOf('0', 'integer')).toBe(0);
  expect(numberOf('8086', 'integer')).toBe(8086);
  expect(numberOf('007', 'integer')).toBe(7); // decimal, not octal
  expect(numberOf('9007199254740991', 'integer')).toBe(Number.MAX_SAFE_INTEGER);
  expect(numberOf('2.5', 'decimal')).toBe(2.5);
  expect(numberOf('.5', 'decimal')).toBe(0.5);
  expect(numberOf('5.', 'decimal')).toBe(5);
  expect(numberOf('10', 'decimal')).toBe(10);
});

it('every other form is NaN, whatever Number() makes of it', () => {
  for (const raw of NOT_PLAIN) {
    expect(numberOf(raw, 'integer'), JSON.stringify(raw)).toBeNaN();
    expect(numberOf(raw, 'decimal'), JSON.stringify(raw)).toBeNaN();
  }
  // A fraction where an integer is meant, even one equal to an integer.
  for (const raw of ['1.5', '5.0', '5.', '.5']) expect(numberOf(raw, 'integer'), raw).toBeNaN();
  // Past 2^53 - 1 an integer reads as another one; a decimal this long is Infinity.
  expect(numberOf('9007199254740993', 'integer')).toBeNaN();
  expect(numberOf('99999999999999999999', 'integer')).toBeNaN();
  expect(numberOf(`1${'0'.repeat(400)}`, 'decimal')).toBeNaN();
});

it("the shared parsers reject each form as a UsageError that shows the value's spaces", () => {
  for (const parse of [parsePositiveInteger('n'), parseNonNegativeInteger('n'), parsePortNumber('port', 0), parsePositiveNumber('s')]) {
    for (const raw of NOT_PLAIN) expect(() => parse(raw), JSON.stringify(raw)).toThrow(UsageError);
  }
  expect(() => parsePortNumber('port')(' 5 ')).toThrow('--port must be an integer in [1, 65535], got " 5 "');
  expect(() => parsePositiveInteger('docs')('1e3')).toThrow('--docs must be a positive integer, got 1e3');
  expect(given('5')).toBe('5');
  expect(given('')).toBe('""');
  expect(given('5\t')).toBe('"5\\t"');
});
