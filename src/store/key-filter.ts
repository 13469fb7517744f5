/**
 * A Bloom filter over every engine key the store holds, so that a read of a row that was never
 * written can be answered without asking the engine. Percolator writes many rows that did not
 * exist (an inverted link, a posting, a lock), and each first write reads the row; in LevelDB a
 * read of an absent key still consults every level's table (opening it when the table cache has
 * closed it), 7–10 µs at 8 000 web-index documents and far more at 100 000.
 *
 * Invariants: a key is added before any write of it can become visible (at plan time, under the
 * row's latch), and a key the engine held when the store opened is added by the opening scan
 * before `ready` turns true. So once ready, `mayContain(k) === false` proves k absent. Keys are
 * never removed (a deleted row only costs a false positive).
 *
 * Persistence (engine-store.ts): a clean close hands the filter to the engine as a seal, and the
 * next open uses it only if the engine proves nothing was written since (LevelDB: its sequence
 * number, embedded/level-seal.ts). Otherwise — a crash, an older build or another tool wrote in
 * between — the opening scan rebuilds it: ~3.5 µs of JS time a key (15 s for 4 million keys).
 *
 * Sizing: layers of 10 bits a key and 7 probes (~1 % false positives each); when the newest layer
 * is full, a new one four times larger is added, so the filter grows with the store without
 * knowing its size (a few MiB for millions of keys). Single-threaded.
 */

import { crc32 } from 'node:zlib';

const BITS_PER_KEY = 10;
const FORMAT_VERSION = 1;
const PROBES = 7;
const FIRST_CAPACITY = 1 << 16;
const GROWTH = 4;

interface Layer {
  readonly words: Uint32Array;
  readonly mask: number;
  readonly capacity: number;
  count: number;
}

function layer(capacity: number): Layer {
  // A power-of-two number of bits, so a probe is a mask rather than a division.
  let bits = 1 << 10;
  while (bits < capacity * BITS_PER_KEY) bits *= 2;
  return { words: new Uint32Array(bits / 32), mask: bits - 1, capacity, count: 0 };
}

export class KeyFilter {
  private layers: Layer[] = [layer(FIRST_CAPACITY)];
  private h1 = 0;
  private h2 = 0;
  /** True once every key the engine held at open has been added. */
  ready = false;

  /**
   * The filter as bytes: crc32:u32be (of the rest), version:u32be, layers:u32be, then per layer
   * capacity:u32be count:u32be words:u32be and the words (little-endian, as in memory).
   */
  serialize(): Buffer {
    let size = 12;
    for (const l of this.layers) size += 12 + l.words.byteLength;
    const out = Buffer.alloc(size);
    out.writeUInt32BE(FORMAT_VERSION, 4);
    out.writeUInt32BE(this.layers.length, 8);
    let at = 12;
    for (const l of this.layers) {
      out.writeUInt32BE(l.capacity, at);
      out.writeUInt32BE(l.count, at + 4);
      out.writeUInt32BE(l.words.length, at + 8);
      at += 12;
      Buffer.from(l.words.buffer, l.words.byteOffset, l.words.byteLength).copy(out, at);
      at += l.words.byteLength;
    }
    out.writeUInt32BE(crc32(out.subarray(4)), 0);
    return out;
  }

  /** A filter from `serialize`'s bytes (ready), or null if they are not a well-formed filter. */
  static deserialize(bytes: Uint8Array): KeyFilter | null {
    const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (b.length < 12 || b.readUInt32BE(0) !== crc32(b.subarray(4)) || b.readUInt32BE(4) !== FORMAT_VERSION) return null;
    const layers: Layer[] = [];
    let at = 12;
    for (let i = b.readUInt32BE(8); i > 0; i--) {
      if (at + 12 > b.length) return null;
      const capacity = b.readUInt32BE(at);
      const count = b.readUInt32BE(at + 4);
      const n = b.readUInt32BE(at + 8);
      at += 12;
      const bits = n * 32;
      if (n === 0 || (bits & (bits - 1)) !== 0 || at + n * 4 > b.length) return null;
      const words = new Uint32Array(n);
      Buffer.from(words.buffer).set(b.subarray(at, at + n * 4));
      at += n * 4;
      layers.push({ words, mask: bits - 1, capacity, count });
    }
    if (layers.length === 0 || at !== b.length) return null;
    const f = new KeyFilter();
    f.layers = layers;
    f.ready = true;
    return f;
  }

  /** Two 32-bit hashes of a latin1 key (FNV-1a and a multiply-xorshift), for double hashing. */
  private hash(key: string): void {
    let a = 0x811c9dc5;
    let b = 0x9747b28c;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
      b ^= b >>> 15;
    }
    this.h1 = (a ^ (a >>> 16)) >>> 0;
    this.h2 = (Math.imul(b ^ (b >>> 13), 0xc2b2ae35) | 1) >>> 0;
  }

  add(key: string): void {
    let top = this.layers[this.layers.length - 1] as Layer;
    if (top.count >= top.capacity) {
      top = layer(top.capacity * GROWTH);
      this.layers.push(top);
    }
    this.hash(key);
    const { words, mask } = top;
    let h = this.h1;
    for (let i = 0; i < PROBES; i++) {
      const bit = h & mask;
      (words[bit >>> 5] as number) |= 1 << (bit & 31);
      h = (h + this.h2) >>> 0;
    }
    top.count++;
  }

  /** False only if `key` was never added. */
  mayContain(key: string): boolean {
    this.hash(key);
    for (const { words, mask } of this.layers) {
      let h = this.h1;
      let all = true;
      for (let i = 0; i < PROBES; i++) {
        const bit = h & mask;
        if (((words[bit >>> 5] as number) & (1 << (bit & 31))) === 0) {
          all = false;
          break;
        }
        h = (h + this.h2) >>> 0;
      }
      if (all) return true;
    }
    return false;
  }

  /** Memory held, in bytes. */
  get bytes(): number {
    let n = 0;
    for (const l of this.layers) n += l.words.byteLength;
    return n;
  }
}
