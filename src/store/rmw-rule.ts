/**
 * What one ReadModifyWrite rule makes of its column's newest value, for the backends that apply
 * rules themselves: the embedded store (engine-store.ts, under the row's latch) and the
 * `bigtable://` store when it must choose the cells' timestamps (bigtable/rmw-cas.ts). One
 * function, so the two cannot drift apart.
 *
 * - append: the previous value followed by `appendValue` (an absent cell is empty);
 * - increment: the previous value as a big-endian signed 64-bit integer plus `incrementAmount`,
 *   wrapping at 64 bits (an absent cell is 0).
 *
 * Returns a new buffer (never the rule's or the previous cell's).
 * Throws StoreError NOT_AN_INT64 when an increment meets a value that is not 8 bytes, and
 * VALUE_TOO_LARGE when an append makes a value over `maxValueBytes` (the limit a SetCell has),
 * each naming table, row and family.
 */
import { keyHex, StoreError } from './errors.js';
import type { Bytes, ReadModifyWriteRule } from './types.js';

export function ruleValue(
  rule: ReadModifyWriteRule,
  previous: Uint8Array | undefined,
  table: string,
  key: Bytes,
  maxValueBytes = Number.POSITIVE_INFINITY,
): Uint8Array {
  if ('appendValue' in rule) {
    // A copy of its own, not a slice of Node's shared buffer pool: the value may be cached for long.
    const value = previous === undefined ? Uint8Array.prototype.slice.call(rule.appendValue) : Buffer.concat([previous, rule.appendValue]);
    if (value.byteLength > maxValueBytes) {
      throw new StoreError('VALUE_TOO_LARGE', `appending makes a value of ${value.byteLength} bytes, over the limit of ${maxValueBytes}`, {
        table,
        row: keyHex(key),
        family: rule.familyName,
        size: value.byteLength,
        limit: maxValueBytes,
      });
    }
    return value;
  }
  let base = 0n;
  if (previous !== undefined) {
    if (previous.byteLength !== 8) {
      throw new StoreError(
        'NOT_AN_INT64',
        `cannot increment a value of ${previous.byteLength} bytes: it must be a 64-bit big-endian integer`,
        { table, row: keyHex(key), family: rule.familyName, size: previous.byteLength },
      );
    }
    base = Buffer.from(previous.buffer, previous.byteOffset, 8).readBigInt64BE(0);
  }
  const value = Buffer.alloc(8);
  value.writeBigInt64BE(BigInt.asIntN(64, base + rule.incrementAmount));
  return value;
}
