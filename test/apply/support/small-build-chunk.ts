/*
 * Imported first (before anything from src/) by a test that crosses the
 * chunk boundaries of a protected rebuild: BUILD_CHUNK (shadow-build.ts) is
 * read from SLUICE_BUILD_CHUNK when that module loads, so the build's chunks
 * are small in this test's process and in every CLI it spawns, and
 * 2 x BUILD_CHUNK + 500 rows take as many transactions as with the real size
 * (20,000) while copying 1,500 rows instead of 40,500. Each test file runs
 * in a process of its own, so no other file sees it.
 */
export const SMALL_BUILD_CHUNK = 500;
process.env.SLUICE_BUILD_CHUNK = String(SMALL_BUILD_CHUNK);
