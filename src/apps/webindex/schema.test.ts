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
      const json = clusterStateJson(members);
      expect(json).toBe(JSON.stringify({ size: members.length, members }));
      expect(parseClusterState(json)).toEqual({ size: members.length, members });
    }
  });

  it('parses the forms of earlier builds (members with in-link counts, as pairs or an object) into the same members, in their order', () => {
    for (let round = 0; round < 50; round++) {
      const members = [...new Set(Array.from({ length: 1 + Math.floor(r() * 5) }, url))];
      const ranks = new Map(members.map((m) => [m, Math.floor(r() * 3000)]));
      const pairs = JSON.stringify({ canonical: members[0], size: members.length, members: [...ranks] });
      const object = JSON.stringify({ canonical: members[0], size: members.length, members: Object.fromEntries(ranks) });
      expect(parseClusterState(pairs)).toEqual({ size: members.length, members });
      expect(parseClusterState(object)).toEqual({ size: members.length, members });
    }
    expect(parseClusterState(null)).toBeNull();
  });
});
