/**
 * The clustering-key policies of the web index (parse.ts › clusterKeys), in a module of their own:
 * `percolator worker --key-mode` lists them in its help and usage errors, which must not load the
 * parser (test/cli-lazy-load.test.ts). `content+url+title` is the paper's three keys (the
 * synthetic corpus); `content` alone suits a corpus whose files share titles (the local docs).
 */
export const KEY_MODES = ['content+url+title', 'content'] as const;

export type KeyMode = (typeof KEY_MODES)[number];
