import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../util/seeded-random.js';
import { clusterStateJson } from './schema.js';

describe('clusterStateJson', () => {
  it('writes the text JSON.stringify makes of the same ClusterState, for URLs that need escaping too', () => {
    const r = mulberry32(5);
    const alphabet = ['a', '/', ':', '"', '\\', '\n', '\u2028', 'é', '😀', '\u0001', '?', '='];
    const url = () => {
      let s = 'https://';
      for (let n = 1 + Math.floor(r() * 12); n > 0; n--) s += alphabet[Math.floor(r() * alphabet.length)];
      return s;
    };
    for (let round = 0; round < 200; round++) {
      const members = [...new Set(Array.from({ length: Math.floor(r() * 6) }, url))];
      const ranks = new Map(members.map((m) => [m, Math.floor(r() * 3000)]));
      const canonical = members[0] ?? '';
      const expected = JSON.stringify({ canonical, size: members.length, members: Object.fromEntries(ranks) });
      expect(clusterStateJson(canonical, members.length, members, (m) => ranks.get(m) as number)).toBe(expected);
    }
  });
});
