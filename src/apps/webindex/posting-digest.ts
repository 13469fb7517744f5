/**
 * An order-independent digest of a multiset of postings (term, score): their count and two 32-bit
 * sums of a 64-bit hash of each. A soak's index holds a million postings; comparing it with the
 * batch entry by entry held both sides in memory (~1.6 GiB at 20 000 documents), while a digest a
 * cluster holds 36 000 of these. Adding is commutative, so postings can be added in any order — the
 * store's index is scanned in term order, a cluster's postings scattered through it — and digests
 * add up (`plus`): a cluster's postings must be its live list and its stale list together.
 *
 * Equal multisets give equal digests. Different ones collide only if their hashes' sums agree in
 * all 64 bits and their counts too: by chance, not by any regularity of terms or scores (the hash
 * mixes every character of both). Not for adversarial input.
 */
export class PostingDigest {
  private count = 0;
  private a = 0;
  private b = 0;

  add(term: string, score: number): this {
    const s = `${term}\u0000${score}`;
    let h1 = 0xdeadbeef;
    let h2 = 0x41c6ce57;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    this.count++;
    this.a = (this.a + h1) >>> 0;
    this.b = (this.b + h2) >>> 0;
    return this;
  }

  /** The digest of both multisets together (neither is changed). */
  plus(other: PostingDigest): PostingDigest {
    const d = new PostingDigest();
    d.count = this.count + other.count;
    d.a = (this.a + other.a) >>> 0;
    d.b = (this.b + other.b) >>> 0;
    return d;
  }

  get size(): number {
    return this.count;
  }

  /** `count:a:b`, hex: equal strings iff equal digests. */
  toString(): string {
    return `${this.count}:${this.a.toString(16)}:${this.b.toString(16)}`;
  }
}
