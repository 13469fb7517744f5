/**
 * The `memory:` engine: an in-memory B+ tree (sorted-btree) implementing KvEngine. Nothing is
 * durable; `write` applies synchronously and resolves immediately (so a deferred write is simply
 * a write). Iterators read a copy-on-write
 * clone, so they see the snapshot taken when they start, like LevelDB's.
 */
import btreeModule from 'sorted-btree';
import { asBuffer, compareBytes } from '../bytes.js';
import { StoreError } from '../errors.js';
import type { KvEngine, KvEntry, KvOp, KvRange } from '../kv-engine.js';

// sorted-btree is CommonJS with `exports.default = BTree`. Node's ESM loader gives the module
// object (class at `.default`); bundler-style interop (vitest) gives the class itself.
type BTreeClass = typeof btreeModule.default;
const BTree: BTreeClass = typeof btreeModule === 'function' ? (btreeModule as unknown as BTreeClass) : btreeModule.default;

const BATCH = 256;

export class MemoryEngine implements KvEngine {
  private tree = new BTree<Buffer, Uint8Array>(undefined, compareBytes);
  private closed = false;

  private check(): void {
    if (this.closed) throw new StoreError('STORE_CLOSED', 'the memory store is closed');
  }

  get(key: Uint8Array): Uint8Array | undefined {
    this.check();
    return this.tree.get(asBuffer(key));
  }

  async *iterate(range: KvRange): AsyncIterable<readonly KvEntry[]> {
    this.check();
    const snap = this.tree.clone();
    const gte = range.gte ? asBuffer(range.gte) : undefined;
    const lt = range.lt ? asBuffer(range.lt) : undefined;
    let batch: KvEntry[] = [];
    if (!range.reverse) {
      for (const [key, value] of snap.entries(gte)) {
        if (lt !== undefined && Buffer.compare(key, lt) >= 0) break;
        batch.push({ key, value });
        if (batch.length === BATCH) {
          yield batch;
          batch = [];
        }
      }
    } else {
      // entriesReversed starts at the highest key <= its argument; skip lt itself (exclusive).
      for (const [key, value] of snap.entriesReversed(lt)) {
        if (lt !== undefined && Buffer.compare(key, lt) >= 0) continue;
        if (gte !== undefined && Buffer.compare(key, gte) < 0) break;
        batch.push({ key, value });
        if (batch.length === BATCH) {
          yield batch;
          batch = [];
        }
      }
    }
    if (batch.length > 0) yield batch;
  }

  async write(ops: readonly KvOp[]): Promise<void> {
    this.check();
    for (const op of ops) {
      if (op.type === 'put') this.tree.set(Buffer.from(op.key), op.value);
      else this.tree.delete(asBuffer(op.key));
    }
  }

  async clear(range: KvRange): Promise<void> {
    this.check();
    const doomed: Buffer[] = [];
    for (const [key] of this.tree.entries(range.gte ? asBuffer(range.gte) : undefined)) {
      if (range.lt !== undefined && Buffer.compare(key, range.lt) >= 0) break;
      doomed.push(key);
    }
    for (const k of doomed) this.tree.delete(k);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
