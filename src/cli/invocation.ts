/**
 * How the hints the commands print (the demo's closing line, search's NO_INDEX) spell a command.
 * `percolator` is on the PATH only where the package is installed globally; `npx percolator` works
 * there and in a checkout too (the package's own bin), so a hint copied as printed runs.
 */
export const CLI = 'npx percolator';
