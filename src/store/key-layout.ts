/**
 * How the Bigtable model maps onto the engine's flat ordered key space (docs/format.md).
 *
 *   0x00 "catalog"                               → JSON catalog (tables, families, locality groups, tablets)
 *   0x01 tableId:u32be lgId:u16be rowKey          → one row's cells of one locality group (row-codec.ts)
 *
 * Invariants: table ids are never reused (a deleted table's keys can be cleared lazily without a
 * recreated table of the same name seeing them); the row key is the last component, so byte order
 * of engine keys within one (table, group) prefix is exactly Bigtable's row order, and a scan of
 * one locality group never touches another group's keys.
 */

export const CATALOG_KEY = Uint8Array.from([0x00, ...Buffer.from('catalog')]);
const DATA_TAG = 0x01;
export const PREFIX_BYTES = 7;

export function groupPrefix(tableId: number, lgId: number): Uint8Array {
  const p = Buffer.allocUnsafe(PREFIX_BYTES);
  p[0] = DATA_TAG;
  p.writeUInt32BE(tableId, 1);
  p.writeUInt16BE(lgId, 5);
  return p;
}

/** All keys of a table: [tablePrefix, tablePrefixEnd). */
export function tableBounds(tableId: number): { gte: Uint8Array; lt: Uint8Array } {
  const gte = Buffer.alloc(5);
  gte[0] = DATA_TAG;
  gte.writeUInt32BE(tableId, 1);
  const lt = Buffer.alloc(5);
  lt[0] = DATA_TAG;
  lt.writeUInt32BE(tableId + 1, 1);
  return { gte, lt };
}

export function rowKeyOf(prefix: Uint8Array, rowKey: Uint8Array): Buffer {
  const k = Buffer.allocUnsafe(prefix.length + rowKey.length);
  k.set(prefix, 0);
  k.set(rowKey, prefix.length);
  return k;
}

/** The row key inside an engine key (a view, no copy). */
export function rowKeyFrom(engineKey: Uint8Array): Uint8Array {
  return engineKey.subarray(PREFIX_BYTES);
}

/** The end of the prefix range of `prefix` (exclusive), or undefined if prefix is all 0xff. */
export function prefixEnd(prefix: Uint8Array): Uint8Array | undefined {
  for (let i = prefix.length - 1; i >= 0; i--) {
    if (prefix[i] !== 0xff) {
      const out = Uint8Array.prototype.slice.call(prefix, 0, i + 1) as Uint8Array;
      out[i] = (out[i] as number) + 1;
      return out;
    }
  }
  return undefined;
}

/** The smallest key strictly greater than `key`: key + 0x00. */
export function keySuccessor(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length + 1);
  out.set(key, 0);
  return out;
}
