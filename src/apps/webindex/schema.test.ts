import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../util/seeded-random.js';
import { clusterStateJson, parseClusterState } from './schema.js';

describe('clusterStateJson', () => {
  const r = mulberry32(5);
  const alphabet = ['a', '/', ':', '"', '\\', '\n', '\u2028', 'é', '😀', '\u0001', '?', '='];
  const url = () => {
    let s = 'https://';
    for (let n = 1 + Math.floor(r() * 12); n > 0; n--) s += alphabet[Math.floor(r() * alphabet.length)];
    return s;
  };

  it('writes the text JSON.stringify makes of the same ClusterState, for URLs that need escaping too', () => {
    for (let round = 0; round < 200; round++) {
      const members = [...new Set(Array.from({ length: Math.floor(r() * 6) }, url))];
      const ranks = new Map(members.map((m) => [m, Math.floor(r() * 3000)]));
      const canonical = members[0] ?? '';
      const expected = JSON.stringify({ canonical, size: members.length, members: [...ranks] });
      const json = clusterStateJson(canonical, members.length, members, (m) => ranks.get(m) as number);
      expect(json).toBe(expected);
      expect(parseClusterState(json)).toEqual({ canonical, size: members.length, members: [...ranks] });
    }
  });

  it('parses the object form of earlier builds into the same members, in their order', () => {
    for (let round = 0; round < 50; round++) {
      const members = [...new Set(Array.from({ length: 1 + Math.floor(r() * 5) }, url))];
      const ranks = new Map(members.map((m) => [m, Math.floor(r() * 3000)]));
      const legacy = JSON.stringify({ canonical: members[0], size: members.length, members: Object.fromEntries(ranks) });
      expect(parseClusterState(legacy)).toEqual({ canonical: members[0], size: members.length, members: [...ranks] });
    }
    expect(parseClusterState(null)).toBeNull();
  });
});
